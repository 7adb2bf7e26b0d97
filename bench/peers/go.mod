module rill/bench/peers

go 1.19
