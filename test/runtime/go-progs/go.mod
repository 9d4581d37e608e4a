module spanprof.test/goprogs

go 1.17
