# throughput-zipf-1: flowswitch 0.1.0; render with
#   gnuplot -e 'set terminal svg; set output "throughput-zipf-1.svg"' throughput-zipf-1.gp
set title "Capacity vs flows: Zipf, 1 subtable" noenhanced
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
1000 23.6416
10000 21.6384
100000 17.9712
1e+06 15.8976
EOD
$S1 << EOD
1 24.1792
10 24.1792
100 24.1856
1000 23.7312
10000 21.9264
100000 17.9904
1e+06 16.1408
EOD
$S2 << EOD
1 21.504
10 21.504
100 21.504
1000 21.504
10000 21.4976
100000 21.4976
1e+06 21.504
EOD
set arrow from 8192, graph 0 to 8192, graph 1 nohead dt 2 lw 2 lc rgb 'gray40'
set label "EMC entries (8192)" at 8192, graph 0.96 offset 0.5,0 noenhanced
plot $S0 using 1:2 with linespoints pt 7 ps 0.8 lw 2 title "stages=EMC only" noenhanced, \
     $S1 using 1:2 with linespoints pt 7 ps 0.8 lw 2 title "stages=EMC+SMC" noenhanced, \
     $S2 using 1:2 with linespoints pt 7 ps 0.8 lw 2 title "stages=classifier only" noenhanced
