# throughput: flowswitch 0.1.0; render with
#   gnuplot -e 'set terminal svg; set output "throughput.svg"' throughput.gp
set title "Capacity of one PMD by checksum placement (64 B)" noenhanced
set xlabel "traffic" noenhanced
set ylabel "Mpps" noenhanced
set grid
set key below noenhanced
set datafile missing '?'
$D << EOD
"VM-to-NIC" 8 6.74133 6.74133 8
"VM-to-VM" 4.43733 4.02133 4.43733 ?
"NIC-to-NIC" ? ? 28.384 28.384
EOD
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set yrange [0:*]
set xtics rotate by 25 right noenhanced
set xrange [-0.6:2.6]
plot $D using 2:xtic(1) title "placement=guest" noenhanced, \
     '' using 3 title "placement=eager (vhost rx)" noenhanced, \
     '' using 4 title "placement=lazy (egress)" noenhanced, \
     '' using 5 title "placement=NIC offload" noenhanced
