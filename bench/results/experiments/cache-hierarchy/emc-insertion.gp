# emc-insertion: flowswitch 0.1.0; render with
#   gnuplot -e 'set terminal svg; set output "emc-insertion.svg"' emc-insertion.gp
set title "EMC only: capacity by insertion probability (uniform)" noenhanced
set xlabel "flows" noenhanced
set ylabel "Mpps" noenhanced
set grid
set key below noenhanced
set datafile missing '?'
set logscale x 10
set format x '%g'
$S0 << EOD
1000 24.1856
10000 18.6368
100000 12.2112
EOD
$S1 << EOD
1000 24.1408
10000 18.176
100000 12.192
EOD
$S2 << EOD
1000 23.2512
10000 18.0416
100000 12.192
EOD
set arrow from 8192, graph 0 to 8192, graph 1 nohead dt 2 lw 2 lc rgb 'gray40'
set label "EMC entries (8192)" at 8192, graph 0.96 offset 0.5,0 noenhanced
plot $S0 using 1:2 with linespoints pt 7 ps 0.8 lw 2 title "stages=EMC only, insertion 1/1" noenhanced, \
     $S1 using 1:2 with linespoints pt 7 ps 0.8 lw 2 title "stages=EMC only, insertion 1/10" noenhanced, \
     $S2 using 1:2 with linespoints pt 7 ps 0.8 lw 2 title "stages=EMC only, insertion 1/100" noenhanced
