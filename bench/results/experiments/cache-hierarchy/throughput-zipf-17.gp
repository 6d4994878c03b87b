# throughput-zipf-17: flowswitch 0.1.0; render with
#   gnuplot -e 'set terminal svg; set output "throughput-zipf-17.svg"' throughput-zipf-17.gp
set title "Capacity vs flows: Zipf, 17 subtables" noenhanced
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
1000 22.8544
10000 19.3344
100000 14.2208
1e+06 11.5008
EOD
$S1 << EOD
1 24.1792
10 24.1856
100 24.1856
1000 23.7248
10000 21.9392
100000 16.6656
1e+06 14.8544
EOD
$S2 << EOD
1 21.504
10 17.5104
100 14.8416
1000 12.1216
10000 12.3008
100000 12.096
1e+06 11.3216
EOD
set arrow from 8192, graph 0 to 8192, graph 1 nohead dt 2 lw 2 lc rgb 'gray40'
set label "EMC entries (8192)" at 8192, graph 0.96 offset 0.5,0 noenhanced
plot $S0 using 1:2 with linespoints pt 7 ps 0.8 lw 2 title "stages=EMC only" noenhanced, \
     $S1 using 1:2 with linespoints pt 7 ps 0.8 lw 2 title "stages=EMC+SMC" noenhanced, \
     $S2 using 1:2 with linespoints pt 7 ps 0.8 lw 2 title "stages=classifier only" noenhanced
