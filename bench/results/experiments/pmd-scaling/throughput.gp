# throughput: flowswitch 0.1.0; render with
#   gnuplot -e 'set terminal svg; set output "throughput.svg"' throughput.gp
set title "Throughput vs PMDs (4 NICs x 16 rx queues, RSS)" noenhanced
set xlabel "PMDs" noenhanced
set ylabel "Mpps" noenhanced
set grid
set key below noenhanced
set datafile missing '?'
set logscale x 10
set format x '%g'
$S0 << EOD
1 29.184
2 58.624
4 116.992
8 148.81
16 148.809
EOD
plot $S0 using 1:2 with linespoints pt 7 ps 0.8 lw 2 title "delivered in the window" noenhanced
