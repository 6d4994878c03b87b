# checksums: flowswitch 0.1.0; render with
#   gnuplot -e 'set terminal svg; set output "checksums.svg"' checksums.gp
set title "Checksums computed per packet, by place (64-byte frames)" noenhanced
set xlabel "traffic / placement" noenhanced
set ylabel "checksums per packet" noenhanced
set grid
set key below noenhanced
set datafile missing '?'
$D << EOD
"VM-to-NIC / guest" 1 0 0 0 0
"VM-to-NIC / eager (vhost rx)" 0 1 0 0 0
"VM-to-NIC / lazy (egress)" 0 0 1 0 0
"VM-to-NIC / NIC offload" 0 0 0 1 0
"VM-to-VM / guest" 1 0 0 0 0
"VM-to-VM / eager (vhost rx)" 0 1 0 0 0
"VM-to-VM / lazy (egress)" 0 0 0 0 1
"NIC-to-NIC / lazy (egress)" 0 0 0 0 0
"NIC-to-NIC / NIC offload" 0 0 0 0 0
EOD
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border -1
set boxwidth 0.6
set yrange [0:*]
set xtics rotate by 25 right noenhanced
set xrange [-0.6:8.6]
plot $D using 2:xtic(1) title "checksums the sending guests computed" noenhanced, \
     '' using 3 title "checksums the host completed at vhost rx" noenhanced, \
     '' using 4 title "checksums the host completed at egress" noenhanced, \
     '' using 5 title "checksums left to NIC offload" noenhanced, \
     '' using 6 title "checksums left to the receiving guest" noenhanced
