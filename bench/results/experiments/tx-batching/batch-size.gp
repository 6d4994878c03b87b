# batch-size: flowswitch 0.1.0; render with
#   gnuplot -e 'set terminal svg; set output "batch-size.svg"' batch-size.gp
set title "Packets per send call (PVP)" noenhanced
set xlabel "flows / offered Mpps" noenhanced
set ylabel "packets per send call" noenhanced
set grid
set key below noenhanced
set datafile missing '?'
$D << EOD
"1 / 1" 1.12879 1.12879 1.25444
"10 / 1" 1.08377 1.12921 1.2547
"100 / 1" 1.07657 1.12879 1.25626
"1000 / 1" 1.07533 1.12879 1.25626
"1 / 3" 3.85696 3.85696 5.07091
"10 / 3" 5.07162 3.85861 5.0766
"100 / 3" 3.38576 3.8652 5.0823
"1000 / 3" 3.01914 3.86603 5.08516
"1 / 40" 31.9499 31.9499 31.9666
"10 / 40" 7.30023 31.9499 31.9692
"100 / 40" 3.37008 31.923 31.9692
"1000 / 40" 3.01857 31.9499 31.9692
EOD
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set yrange [0:*]
set xtics rotate by 25 right noenhanced
set xrange [-0.6:11.6]
plot $D using 2:xtic(1) title "batching=off" noenhanced, \
     '' using 3 title "batching=interval 0" noenhanced, \
     '' using 4 title "batching=interval 50 us" noenhanced
