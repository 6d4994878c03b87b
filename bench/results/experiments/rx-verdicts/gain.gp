# gain: flowswitch 0.1.0; render with
#   gnuplot -e 'set terminal svg; set output "gain.svg"' gain.gp
set title "Gain of GOOD verdicts over UNKNOWN" noenhanced
set xlabel "inner frame size (bytes)" noenhanced
set ylabel "gain (%)" noenhanced
set grid
set key below noenhanced
set datafile missing '?'
$D << EOD
"64" 10.5033 19.0572
"128" 8.84152 1.27053
"256" 0 -0.00347729
"512" 0 0
"1024" 0 0
"1500" 0 0
"imix" 0 0
EOD
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set yrange [0:*]
set xtics rotate by 25 right noenhanced
set xrange [-0.6:6.6]
$R << EOD
0 7.4
1 9.5
6 11
EOD
plot $D using 2:xtic(1) title "profile=reference" noenhanced, \
     '' using 3 title "profile=xeon-vm-2.6ghz" noenhanced, \
     $R using 1:2 with points pt 13 ps 2.2 lc rgb 'black' title "OVS PHY-VXLAN-PHY with rx checksum offload: +7.4% (64 B), +9.5% (128 B), +11.0% (mix)" noenhanced
