# throughput: flowswitch 0.1.0; render with
#   gnuplot -e 'set terminal svg; set output "throughput.svg"' throughput.gp
set title "VXLAN decapsulation: capacity by rx checksum verdicts" noenhanced
set xlabel "inner frame size (bytes)" noenhanced
set ylabel "Mpps" noenhanced
set grid
set key below noenhanced
set datafile missing '?'
$D << EOD
"64" 14.624 16.16
"128" 14.496 15.7777
"256" 9.586 9.586
"512" 5.36933 5.36933
"1024" 2.85633 2.85633
"1500" 1.99033 1.99033
"imix" 7.19367 7.19367
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
