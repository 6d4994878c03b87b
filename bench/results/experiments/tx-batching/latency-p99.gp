# latency-p99: flowswitch 0.1.0; render with
#   gnuplot -e 'set terminal svg; set output "latency-p99.svg"' latency-p99.gp
set title "99th percentile latency vs offered load (10 flows)" noenhanced
set xlabel "offered load (Mpps)" noenhanced
set ylabel "latency (us)" noenhanced
set grid
set key below noenhanced
set datafile missing '?'
set logscale x 10
set format x '%g'
$S0 << EOD
1 3.592
3 30.263
40 333.183
EOD
$S1 << EOD
1 2.296
3 8.955
40 273.791
EOD
$S2 << EOD
1 2.486
3 10.515
40 281.471
EOD
plot $S0 using 1:2 with linespoints pt 7 ps 0.8 lw 2 title "batching=off" noenhanced, \
     $S1 using 1:2 with linespoints pt 7 ps 0.8 lw 2 title "batching=interval 0" noenhanced, \
     $S2 using 1:2 with linespoints pt 7 ps 0.8 lw 2 title "batching=interval 50 us" noenhanced
