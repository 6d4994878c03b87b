# verified: flowswitch 0.1.0; render with
#   gnuplot -e 'set terminal svg; set output "verified.svg"' verified.gp
set title "Checksums verified in software per packet" noenhanced
set xlabel "inner frame size (bytes)" noenhanced
set ylabel "checksums per packet" noenhanced
set grid
set key below noenhanced
set datafile missing '?'
$D << EOD
"64" 2 0
"128" 2 0
"256" 2 0
"512" 2 0
"1024" 2 0
"1500" 2 0
"imix" 2 0
EOD
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set yrange [0:*]
set xtics rotate by 25 right noenhanced
set xrange [-0.6:6.6]
plot $D using 2:xtic(1) title "verdicts=UNKNOWN" noenhanced, \
     '' using 3 title "verdicts=GOOD" noenhanced
