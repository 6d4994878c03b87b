# hits-uniform: flowswitch 0.1.0; render with
#   gnuplot -e 'set terminal svg; set output "hits-uniform.svg"' hits-uniform.gp
set title "Lookups answered per stage (EMC+SMC, uniform, 1 subtable)" noenhanced
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
1000 0.997638
10000 0.694612
100000 0.0798664
1e+06 0.00840963
EOD
$S1 << EOD
1 0
10 0
100 0
1000 0.0023624
10000 0.305388
100000 0.790701
1e+06 0.809448
EOD
$S2 << EOD
1 0
10 0
100 0
1000 0
10000 0
100000 0.129433
1e+06 0.182142
EOD
$S3 << EOD
1 0
10 0
100 0
1000 0
10000 0
100000 0
1e+06 0
EOD
set arrow from 8192, graph 0 to 8192, graph 1 nohead dt 2 lw 2 lc rgb 'gray40'
set label "EMC entries (8192)" at 8192, graph 0.96 offset 0.5,0 noenhanced
plot $S0 using 1:2 with linespoints pt 7 ps 0.8 lw 2 title "lookups answered by the EMC" noenhanced, \
     $S1 using 1:2 with linespoints pt 7 ps 0.8 lw 2 title "lookups answered by the SMC" noenhanced, \
     $S2 using 1:2 with linespoints pt 7 ps 0.8 lw 2 title "lookups answered by the megaflow classifier" noenhanced, \
     $S3 using 1:2 with linespoints pt 7 ps 0.8 lw 2 title "lookups that went to the rule table" noenhanced
