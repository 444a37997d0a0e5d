# Redraw the charts: gnuplot plots.gp (in this directory). Written by llmux bench.

reset
set grid
set key outside right top noenhanced
set title "Output tok/s vs concurrency (1 = serial)\nhttp://127.0.0.1:36601: direct messages, direct chat\nhttp://127.0.0.1:32937: gateway messages, gateway chat" noenhanced
set xlabel "concurrent requests" noenhanced
set ylabel "output tok/s" noenhanced
set logscale x 2
set yrange [0:*]
set terminal svg size 1100,620 dynamic noenhanced background rgb 'white'
set output "tok_s_vs_concurrency.svg"
plot "tok_s_vs_concurrency.dat" index 0 using 1:2 with linespoints lw 2 pt 7 title "direct messages", '' index 1 using 1:2 with linespoints lw 2 pt 7 title "gateway messages", '' index 2 using 1:2 with linespoints lw 2 pt 7 title "direct chat", '' index 3 using 1:2 with linespoints lw 2 pt 7 title "gateway chat"
set terminal pngcairo size 1100,620 noenhanced
set output "tok_s_vs_concurrency.png"
replot
unset output

reset
set grid
set key outside right top noenhanced
set title "Request latency (E2E) distribution of the serial requests\nhttp://127.0.0.1:36601: direct messages, direct chat\nhttp://127.0.0.1:32937: gateway messages, gateway chat" noenhanced
set xlabel "request start to last byte (ms)" noenhanced
set ylabel "fraction of requests" noenhanced
set yrange [0:1]
set terminal svg size 1100,620 dynamic noenhanced background rgb 'white'
set output "serial_e2e.svg"
plot "serial_e2e.dat" index 0 using 1:2 with steps lw 2 title "direct messages", '' index 1 using 1:2 with steps lw 2 title "gateway messages", '' index 2 using 1:2 with steps lw 2 title "direct chat", '' index 3 using 1:2 with steps lw 2 title "gateway chat"
set terminal pngcairo size 1100,620 noenhanced
set output "serial_e2e.png"
replot
unset output

reset
set grid
set key outside right top noenhanced
set title "Request latency (E2E) distribution at N=8\nhttp://127.0.0.1:36601: direct messages, direct chat\nhttp://127.0.0.1:32937: gateway messages, gateway chat" noenhanced
set xlabel "request start to last byte (ms)" noenhanced
set ylabel "fraction of requests" noenhanced
set yrange [0:1]
set terminal svg size 1100,620 dynamic noenhanced background rgb 'white'
set output "n8_e2e.svg"
plot "n8_e2e.dat" index 0 using 1:2 with steps lw 2 title "direct messages", '' index 1 using 1:2 with steps lw 2 title "gateway messages", '' index 2 using 1:2 with steps lw 2 title "direct chat", '' index 3 using 1:2 with steps lw 2 title "gateway chat"
set terminal pngcairo size 1100,620 noenhanced
set output "n8_e2e.png"
replot
unset output

reset
set grid
set key outside right top noenhanced
set title "Output tok/s over time (each path serial, then each N)\nhttp://127.0.0.1:36601: direct messages, direct chat\nhttp://127.0.0.1:32937: gateway messages, gateway chat" noenhanced
set xlabel "seconds since the benchmark started" noenhanced
set ylabel "output tok/s" noenhanced
set yrange [0:*]
set terminal svg size 1100,620 dynamic noenhanced background rgb 'white'
set output "tok_s_over_time.svg"
plot "tok_s_over_time.dat" index 0 using 1:2 with lines lw 2 title "direct messages", '' index 1 using 1:2 with lines lw 2 title "gateway messages", '' index 2 using 1:2 with lines lw 2 title "direct chat", '' index 3 using 1:2 with lines lw 2 title "gateway chat"
set terminal pngcairo size 1100,620 noenhanced
set output "tok_s_over_time.png"
replot
unset output
