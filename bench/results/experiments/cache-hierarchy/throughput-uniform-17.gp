# throughput-uniform-17: flowswitch 0.1.0; render with
#   gnuplot -e 'set terminal svg; set output "throughput-uniform-17.svg"' throughput-uniform-17.gp
set title "Capacity vs flows: uniform, 17 subtables" noenhanced
set xlabel "flows" noenhanced
set ylabel "Mpps" noenhanced
set grid
set key below noenhanced
set datafile missing '?'
set logscale x 10
set format x '%g'
$S0 << EOD
1 24.1792
10 24.1792
100 24.1792
1000 23.968
10000 13.9136
100000 7.264
1e+06 7.1552
EOD
$S1 << EOD
1 24.1792
10 24.1792
100 24.1856
1000 24.1408
10000 18.8352
100000 10.4896
1e+06 9.9136
EOD
$S2 << EOD
1 21.504
10 18.9184
100 13.3376
1000 10.7648
10000 10.9952
100000 9.4336
1e+06 9.8624
EOD
set arrow from 8192, graph 0 to 8192, graph 1 nohead dt 2 lw 2 lc rgb 'gray40'
set label "EMC entries (8192)" at 8192, graph 0.96 offset 0.5,0 noenhanced
plot $S0 using 1:2 with linespoints pt 7 ps 0.8 lw 2 title "stages=EMC only" noenhanced, \
     $S1 using 1:2 with linespoints pt 7 ps 0.8 lw 2 title "stages=EMC+SMC" noenhanced, \
     $S2 using 1:2 with linespoints pt 7 ps 0.8 lw 2 title "stages=classifier only" noenhanced
