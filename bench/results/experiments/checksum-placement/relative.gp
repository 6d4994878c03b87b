# relative: flowswitch 0.1.0; render with
#   gnuplot -e 'set terminal svg; set output "relative.svg"' relative.gp
set title "Capacity relative to the lazy placement (64 B)" noenhanced
set xlabel "traffic" noenhanced
set ylabel "capacity / lazy placement's" noenhanced
set grid
set key below noenhanced
set datafile missing '?'
$D << EOD
"VM-to-NIC" 1.18671 1 1 1.18671
"VM-to-VM" 1 0.90625 1 ?
"NIC-to-NIC" ? ? 1 1
EOD
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set yrange [0:*]
set xtics rotate by 25 right noenhanced
set xrange [-0.6:2.6]
$R << EOD
2 0.961269
EOD
plot $D using 2:xtic(1) title "placement=guest" noenhanced, \
     '' using 3 title "placement=eager (vhost rx)" noenhanced, \
     '' using 4 title "placement=lazy (egress)" noenhanced, \
     '' using 5 title "placement=NIC offload" noenhanced, \
     $R using 1:2 with points pt 13 ps 2.2 lc rgb 'black' title "OVS v1 eager sum at send, phy-phy 64 B: 13.055/13.581" noenhanced
