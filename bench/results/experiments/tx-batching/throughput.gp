# throughput: flowswitch 0.1.0; render with
#   gnuplot -e 'set terminal svg; set output "throughput.svg"' throughput.gp
set title "Capacity vs flows at overload, by output batching" noenhanced
set xlabel "flows" noenhanced
set ylabel "Mpps" noenhanced
set grid
set key below noenhanced
set datafile missing '?'
set logscale x 10
set format x '%g'
$S0 << EOD
1 3.9744
10 3.2832
100 2.592
1000 2.4832
EOD
$S1 << EOD
1 3.9744
10 3.9744
100 3.9744
1000 3.9744
EOD
$S2 << EOD
1 3.9744
10 3.9744
100 3.9744
1000 3.9744
EOD
plot $S0 using 1:2 with linespoints pt 7 ps 0.8 lw 2 title "batching=off" noenhanced, \
     $S1 using 1:2 with linespoints pt 7 ps 0.8 lw 2 title "batching=interval 0" noenhanced, \
     $S2 using 1:2 with linespoints pt 7 ps 0.8 lw 2 title "batching=interval 50 us" noenhanced
