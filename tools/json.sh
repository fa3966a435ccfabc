# Sourced by the tools/ scripts (not run): read figures out of the JSON zoo and the reference
# scripts print (one object per line: `zoo eval`, metrics.jsonl events, the benchmarks' results)
# and summarise them.
#   field KEY         the number after "KEY": on stdin (the first on each line that has one)
#   flag KEY          the true or false after "KEY": on stdin
#   median VALUE...   the median of the numbers (the mean of the middle two for an even count)
field() { sed -n "s/.*\"$1\": *\([-0-9.eE+]*\).*/\1/p"; }
flag() { sed -n "s/.*\"$1\": *\(true\|false\).*/\1/p"; }
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2)}'; }
