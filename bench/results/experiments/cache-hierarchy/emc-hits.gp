# emc-hits: flowswitch 0.1.0; render with
#   gnuplot -e 'set terminal svg; set output "emc-hits.svg"' emc-hits.gp
set title "EMC hit share vs flows (EMC only, 1 subtable)" noenhanced
set xlabel "flows" noenhanced
set ylabel "share of lookups" noenhanced
set grid
set key below noenhanced
set datafile missing '?'
set logscale x 10
set format x '%g'
$S0 << EOD
1 1
10 1
100 1
1000 0.998442
10000 0.690867
100000 0.0795276
1e+06 0.00783379
EOD
$S1 << EOD
1 1
10 1
100 1
1000 0.978783
10000 0.88989
100000 0.676404
1e+06 0.511939
EOD
set arrow from 8192, graph 0 to 8192, graph 1 nohead dt 2 lw 2 lc rgb 'gray40'
set label "EMC entries (8192)" at 8192, graph 0.96 offset 0.5,0 noenhanced
plot $S0 using 1:2 with linespoints pt 7 ps 0.8 lw 2 title "popularity=uniform" noenhanced, \
     $S1 using 1:2 with linespoints pt 7 ps 0.8 lw 2 title "popularity=zipf" noenhanced
