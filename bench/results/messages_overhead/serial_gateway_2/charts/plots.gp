# Redraw the charts: gnuplot plots.gp (in this directory). Written by llmux bench.

reset
set grid
set key outside right top noenhanced
set title "Output tok/s vs concurrency\nhttp://127.0.0.1:32937" noenhanced
set xlabel "concurrency" noenhanced
set ylabel "output tok/s" noenhanced
set logscale x 2
set yrange [0:*]
set terminal svg size 1100,620 dynamic noenhanced background rgb 'white'
set output "tok_s_vs_concurrency.svg"
plot "tok_s_vs_concurrency.dat" index 0 using 1:2 with linespoints lw 2 pt 7 title "http://127.0.0.1:32937"
set terminal pngcairo size 1100,620 noenhanced
set output "tok_s_vs_concurrency.png"
replot
unset output

reset
set grid
set key outside right top noenhanced
set title "TTFT distribution per level\nhttp://127.0.0.1:32937" noenhanced
set xlabel "time to first token (ms)" noenhanced
set ylabel "fraction of requests" noenhanced
set yrange [0:1]
set terminal svg size 1100,620 dynamic noenhanced background rgb 'white'
set output "latency_ttft.svg"
plot "latency_ttft.dat" index 0 using 1:2 with steps lw 2 title "N=1"
set terminal pngcairo size 1100,620 noenhanced
set output "latency_ttft.png"
replot
unset output

reset
set grid
set key outside right top noenhanced
set title "ITL distribution per level\nhttp://127.0.0.1:32937" noenhanced
set xlabel "inter-token latency (ms)" noenhanced
set ylabel "fraction of tokens" noenhanced
set yrange [0:1]
set terminal svg size 1100,620 dynamic noenhanced background rgb 'white'
set output "latency_itl.svg"
plot "latency_itl.dat" index 0 using 1:2 with steps lw 2 title "N=1"
set terminal pngcairo size 1100,620 noenhanced
set output "latency_itl.png"
replot
unset output

reset
set grid
set key outside right top noenhanced
set title "Request latency (E2E) distribution per level\nhttp://127.0.0.1:32937" noenhanced
set xlabel "request start to last byte (ms)" noenhanced
set ylabel "fraction of requests" noenhanced
set yrange [0:1]
set terminal svg size 1100,620 dynamic noenhanced background rgb 'white'
set output "latency_e2e.svg"
plot "latency_e2e.dat" index 0 using 1:2 with steps lw 2 title "N=1"
set terminal pngcairo size 1100,620 noenhanced
set output "latency_e2e.png"
replot
unset output

reset
set grid
set key outside right top noenhanced
set title "Output tok/s over time, per level\nhttp://127.0.0.1:32937" noenhanced
set xlabel "seconds since the level started" noenhanced
set ylabel "output tok/s" noenhanced
set yrange [0:*]
set terminal svg size 1100,620 dynamic noenhanced background rgb 'white'
set output "tok_s_over_time.svg"
plot "tok_s_over_time.dat" index 0 using 1:2 with lines lw 2 title "N=1"
set terminal pngcairo size 1100,620 noenhanced
set output "tok_s_over_time.png"
replot
unset output
