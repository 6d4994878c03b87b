# balance: flowswitch 0.1.0; render with
#   gnuplot -e 'set terminal svg; set output "balance.svg"' balance.gp
set title "Per-PMD rates" noenhanced
set xlabel "PMDs" noenhanced
set ylabel "Mpps" noenhanced
set grid
set key below noenhanced
set datafile missing '?'
set logscale x 10
set format x '%g'
$S0 << EOD
1 29.184
2 29.312
4 29.248
8 18.2312
16 9.06725
EOD
$S1 << EOD
1 29.184
2 29.312
4 29.248
8 19.0341
16 9.57563
EOD
plot $S0 using 1:2 with linespoints pt 7 ps 0.8 lw 2 title "the least loaded PMD's rate" noenhanced, \
     $S1 using 1:2 with linespoints pt 7 ps 0.8 lw 2 title "the most loaded PMD's rate" noenhanced
