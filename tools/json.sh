# Sourced by the tools/ scripts (not run): read a figure out of the JSON zoo and the reference
# scripts print (one object per line: `zoo eval`, metrics.jsonl events, the benchmarks' results).
#   field KEY    the number after "KEY": on stdin (the first on each line that has one)
field() { sed -n "s/.*\"$1\": *\([-0-9.eE+]*\).*/\1/p"; }
