# speedup: flowswitch 0.1.0; render with
#   gnuplot -e 'set terminal svg; set output "speedup.svg"' speedup.gp
set title "Speed-up over one PMD" noenhanced
set xlabel "PMDs" noenhanced
set ylabel "throughput / one PMD's" noenhanced
set grid
set key below noenhanced
set datafile missing '?'
set logscale x 10
set format x '%g'
set logscale y 10
$S0 << EOD
1 1
2 2.00877
4 4.00877
8 5.09902
16 5.099
EOD
plot $S0 using 1:2 with linespoints pt 7 ps 0.8 lw 2 title "throughput / one PMD's" noenhanced
