# gain: flowswitch 0.1.0; render with
#   gnuplot -e 'set terminal svg; set output "gain.svg"' gain.gp
set title "Gain over unbatched sends at overload" noenhanced
set xlabel "flows" noenhanced
set ylabel "gain (%)" noenhanced
set grid
set key below noenhanced
set datafile missing '?'
set logscale x 10
set format x '%g'
$S0 << EOD
1 0
10 0
100 0
1000 0
EOD
$S1 << EOD
1 0
10 21.0526
100 53.3333
1000 60.0515
EOD
$S2 << EOD
1 0
10 21.0526
100 53.3333
1000 60.0515
EOD
$R << EOD
10 33.7
1000 73
EOD
plot $S0 using 1:2 with linespoints pt 7 ps 0.8 lw 2 title "batching=off" noenhanced, \
     $S1 using 1:2 with linespoints pt 7 ps 0.8 lw 2 title "batching=interval 0" noenhanced, \
     $S2 using 1:2 with linespoints pt 7 ps 0.8 lw 2 title "batching=interval 50 us" noenhanced, \
     $R using 1:2 with points pt 13 ps 2.2 lc rgb 'black' title "OVS output batching, PVP: +33.7% (10 flows), +73% (1000 flows)" noenhanced
