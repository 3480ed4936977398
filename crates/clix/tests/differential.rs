//! Differential test against GNU bash: every line in `CASES` runs once through
//! `clix run --raw` and once through `bash -c`, each on its own fresh copy of the
//! same fixture project, and stdout plus exit code must match. Stderr is not
//! compared: error wording legitimately differs.
//!
//! Lines where bashkit is known to differ are marked `Known(why)`; for those the
//! test asserts the outputs still differ, so the record stays true. See
//! docs/differential.md. Run: `cargo test -p clix --test differential`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

mod common;

use std::fs;
use std::path::Path;

use common::differ::{run_bash, run_clix};

enum Expect {
    Same,
    Known(&'static str),
}
use Expect::{Known, Same};

struct Case {
    line: &'static str,
    expect: Expect,
}

const fn same(line: &'static str) -> Case {
    Case { line, expect: Same }
}

const fn known(line: &'static str, why: &'static str) -> Case {
    Case { line, expect: Known(why) }
}

const CASES: &[Case] = &[
    // grep, alone and in pipelines.
    same("cat app.log | grep ERROR | wc -l"),
    same("grep -c WARN app.log"),
    same("grep -n 'disk full' app.log"),
    same("grep -i 'error' app.log | head -3"),
    same("grep -v INFO app.log | wc -l"),
    same("grep -vc '^$' notes.txt"),
    same("grep -E 'ERROR|WARN' app.log | tail -3"),
    same("grep -e timeout -e 'disk full' app.log | wc -l"),
    same("grep -F '[disk]' app.log"),
    same("grep -x 'beta' docs/*.txt"),
    same("grep -w 'eng' data.csv | wc -l"),
    same("grep -m1 ERROR app.log"),
    same("grep -q ERROR app.log && echo found"),
    same("if grep -q 'disk full' app.log; then echo alert; else echo fine; fi"),
    same("grep -c nosuchthing app.log; echo rc=$?"),
    same("grep nosuchthing app.log | wc -l"),
    same("grep x missing.txt; echo $?"),
    same("grep -s x missing.txt; echo $?"),
    same("grep -o 'user=[a-z]*' app.log | sort | uniq -c | sort -rn"),
    same("grep -oP 'user=\\K\\w+' app.log | sort | uniq -c | sort -rn | head -3"),
    same("grep -P 'took \\d{4}ms' app.log | wc -l"),
    same("grep -oE '[0-9]+ms' app.log | sort -n | tail -1"),
    same("grep -Eo '[0-9]{1,3}(\\.[0-9]{1,3}){3}' config.json"),
    same("grep -n -A2 'disk full' app.log"),
    same("grep -B1 -n 'shutdown' app.log"),
    same("grep -n -C1 'disk full' app.log"),
    same("grep -A3 '^## Usage' README.md"),
    same("grep -c ERROR app.log docs/a.txt"),
    same("grep -n ERROR app.log docs/a.txt | head -2"),
    same("grep -l ERROR *.log *.txt"),
    same("grep -L beta docs/*.txt"),
    same("grep -h alpha docs/*.txt"),
    same("grep -H beta docs/*.txt"),
    same("grep -c . notes.txt; grep -c '' notes.txt; grep -n '^$' notes.txt"),
    same("grep -r 'def ' src | sort"),
    same("grep -r TODO | sort"),
    same("grep -rn TODO . | sort"),
    same("grep -rl 'import' . | sort"),
    same("grep -ril todo . | sort"),
    same("grep -rc TODO src | sort"),
    same("grep -rn TODO --include='*.py' . | sort"),
    same("grep -rn 'port' --include=*.js --include=*.json . | sort"),
    same("grep -rn TODO src --exclude-dir=lib"),
    same("grep -rh TODO src | sed 's/^ *//' | sort"),
    same("egrep -c 'WARN|ERROR' app.log"),
    same("cat src/main.py | grep -n import"),
    // find and xargs (sorted where the order is unspecified).
    same("find . -name '*.py' | sort"),
    same("find . -type f | sort"),
    same("find . -type d | sort"),
    same("find . -type f | wc -l"),
    same("find . -maxdepth 1 -type f | sort"),
    same("find . -mindepth 2 -type f | sort"),
    same("find . -empty | sort"),
    same("find . -iname 'readme*'"),
    same("find . -path './src/*' -type f | sort"),
    same("find . -regex '.*\\.py$' | sort"),
    same("find src -name '*.js' -o -name '*.py' | sort"),
    same("find . \\( -name '*.py' -o -name '*.js' \\) -type f | sort"),
    same("find . -name '*.txt' -not -path './docs/*' | sort"),
    same("find . -type f -size +1k | sort"),
    same("find . -name '*.py' -printf '%P\\n' | sort"),
    same("find . -name '*.txt' -delete; find . -type f | sort"),
    same("find . -type f -name '*.txt' | xargs wc -l | sort"),
    same("find . -name '*.txt' -exec wc -l {} \\; | sort"),
    same("find . -name '*.py' -exec grep -l import {} + | sort"),
    same("find . -type f -exec sh -c 'echo $(basename \"$1\")' _ {} \\; | sort"),
    same("find . -name '*.py' -print0 | xargs -0 grep -c def | sort"),
    same("find . -name '*.py' | xargs grep -l sys"),
    same("find . -name '*.py' | sort | xargs -I{} sh -c 'wc -l < {}'"),
    same("find src -type f | sort | xargs cat | wc -l"),
    same("wc -l $(find . -name '*.py' | sort)"),
    same("seq 3 | xargs -I{} echo item-{}"),
    same("ls docs/*.txt | xargs -I{} basename {}"),
    same("echo a b c d | xargs -n2; seq 7 | xargs -n3"),
    same("echo 1 2 3 | xargs echo got"),
    same("printf 'a\\0b\\0' | xargs -0 -n1 echo"),
    same("find . -name '*.nomatch' | xargs -r rm; echo $?"),
    // Heredocs, redirections and file operations.
    same("cat > out.txt <<'EOF'\nline one\n$HOME stays literal\nEOF\ncat out.txt"),
    same("name=world; cat <<EOF\nhello $name\n$(echo sub)\nEOF"),
    same("cat <<-EOF\n\tindented\n\tEOF"),
    same("cat <<EOF | grep b\na\nb\nEOF"),
    same("cat > f.py <<'EOF'\nprint(\"hi\\n\")  # it's\nx = '$y'\nEOF\ncat f.py; wc -l f.py"),
    same("cat > c.json <<'EOF'\n{\"k\": [1, 2]}\nEOF\njq '.k | length' c.json"),
    same("echo hello > out.txt && echo world >> out.txt && cat out.txt"),
    same("{ echo a; echo b; } > grouped.txt; cat grouped.txt"),
    same("echo one &> out.txt; cat out.txt"),
    same("echo hi | tee t.txt; cat t.txt"),
    same("echo a | tee -a docs/d.txt > /dev/null; cat docs/d.txt"),
    same("printf 'one\\ntwo' > nonl.txt; wc -l nonl.txt; cat nonl.txt; echo"),
    same("printf 'one\\ntwo' > nonl.txt; while read -r l; do echo $l; done < nonl.txt"),
    same("cat missing.txt 2>&1 | wc -l"),
    same("ls missing > out.txt 2>&1; echo rc=$?; wc -l < out.txt"),
    same("ls missing 2>&1 | tee log.txt | wc -l; wc -l < log.txt"),
    same("ls nope 2>/dev/null || echo none"),
    same("{ echo out; echo err >&2; } 2>&1 | sort"),
    same("echo err >&2; echo hidden > /dev/stderr; echo done"),
    same("touch new.txt && ls new.txt && rm new.txt && ls new.txt 2>/dev/null; echo $?"),
    same("touch file{1..3}.log && ls *.log"),
    same("cp data.csv copy.csv && cmp data.csv copy.csv && echo same"),
    same("cp -r src src2 && find src2 | sort"),
    same("mv notes.txt notes.md && ls *.md"),
    same("for f in docs/*.txt; do mv \"$f\" \"${f%.txt}.md\"; done; ls docs"),
    same("rm -rf docs && ls"),
    same("rm missing; echo $?; mkdir src; echo $?; cat src; echo $?"),
    same("mkdir -p a/b && touch a/b/c && find a | sort"),
    same("mkdir build && cd build && touch x && ls && pwd"),
    same("ln -s data.csv link.csv && head -2 link.csv && readlink link.csv && find . -type l"),
    same("split -l 100 app.log part_ && ls part_* && wc -l part_aa"),
    same("tar czf a.tgz src && tar tzf a.tgz | sort"),
    same("gzip -k data.csv && gunzip -c data.csv.gz | head -2"),
    // sed.
    same("sed -i 's/localhost/127.0.0.1/' config.json && grep 127 config.json"),
    same("sed -i '/^$/d' notes.txt && cat notes.txt"),
    same("sed -i '1i # header' docs/a.txt && cat docs/a.txt"),
    same("sed -i.bak 's/alpha/ALPHA/' docs/a.txt && cat docs/a.txt docs/a.txt.bak"),
    same("sed -n '1,5p' data.csv"),
    same("sed -n '10,$p' app.log | wc -l; sed 5q data.csv"),
    same("sed -n '$p' data.csv; sed -n '2{p;q}' data.csv"),
    same("sed '1d' data.csv | head -2; sed '$d' docs/a.txt"),
    same("sed 's/,/;/g' data.csv | head -3"),
    same("sed -n '/ERROR/p' app.log | wc -l"),
    same("sed -n '/ERROR/{=;p}' app.log | head -4"),
    same("sed '/^$/d' notes.txt"),
    same("sed 's/[[:space:]]*$//' notes.txt | cat -A"),
    same("sed -E 's/^([0-9]+),([a-z]+).*/\\2=\\1/' data.csv | tail -3"),
    same("sed -n 's/.*user=\\([a-z]*\\).*/\\1/p' app.log | sort -u"),
    same("sed -n '/^## Usage/,/^## Files/p' README.md"),
    same("sed -e 's/a/A/g' -e 's/e/E/' docs/b.txt"),
    same("sed '/beta/a\\inserted' docs/a.txt; sed '2c\\changed' docs/a.txt; sed '/gamma/i before' docs/a.txt"),
    same("sed 's/^/> /' docs/a.txt; sed = docs/d.txt; sed 'y/abc/xyz/' docs/d.txt"),
    same("echo path/to/file | sed 's|/|_|g'; echo line | sed 's/line/&&/'"),
    same("echo 'CamelCase' | sed 's/[A-Z]/_\\L&/g'; echo abc | sed 's/b/\\U&/'"),
    same("sed -n l windows.txt"),
    // awk.
    same("awk '{print $3}' app.log | sort | uniq -c | sort -rn"),
    same("awk -F, 'NR>1 {sum+=$3} END {print sum}' data.csv"),
    same("awk -F, '$4==\"eng\" {print $2}' data.csv"),
    same("awk -F, 'NR>1 && $3>50 {c++} END {print c+0}' data.csv"),
    same("awk -F, 'NR>1 {s[$4]+=$3} END {for (d in s) print d, s[d]}' data.csv | sort"),
    same("awk -F, 'NR>1 {printf \"%-6s %5.1f\\n\", $2, $3/3}' data.csv | head -4"),
    same("awk '/ERROR/ {n++} END {print n}' app.log"),
    same("awk 'END {print NR}' app.log; awk 'NR%100==0' app.log"),
    same("awk 'length > 75' app.log | wc -l"),
    same("awk -F, '{print NF}' data.csv | sort -u"),
    same("awk -v n=3 'NR<=n' data.csv"),
    same("awk 'NR==FNR {seen[$0]=1; next} seen[$0]' docs/a.txt docs/b.txt"),
    same("awk '{print toupper(substr($0,1,3))}' docs/a.txt; awk '{gsub(/a/, \"@\"); print}' docs/a.txt"),
    same("awk 'BEGIN {printf \"%.2f\\n\", 10/3}'"),
    same("awk '{print $NF}' docs/d.txt; awk '{print $(NF-1)}' app.log | head -2"),
    same("echo 'a:b:c' | awk -F: -v OFS=, '{$1=$1; print}'"),
    same("awk '/beta/,/gamma/' docs/a.txt"),
    same("awk 'BEGIN { while ((getline l < \"docs/a.txt\") > 0) n++; print n }'"),
    same("awk '{print > (\"out_\" $3 \".txt\")}' app.log; wc -l out_*.txt"),
    same("awk 'match($0, /user=[a-z]+/) {print substr($0, RSTART+5, RLENGTH-5)}' app.log | head -3"),
    same("awk '{print length($0)}' windows.txt"),
    // cut, sort, uniq, tr and friends.
    same("cut -d, -f2 data.csv | head -5"),
    same("cut -d, -f2,4 data.csv | head -3"),
    same("cut -d, -f4 data.csv | sort | uniq -c | sort -rn"),
    same("cut -d' ' -f3- app.log | head -2; cut -c3- docs/a.txt"),
    same("cut -f1 -d' ' app.log | uniq -c"),
    same("echo 'a   b  c' | tr -s ' ' | cut -d' ' -f2"),
    same("sort -t, -k3 -n data.csv | head -3"),
    same("sort -t, -k3,3nr data.csv | head -3"),
    same("sort -t, -k4,4 -k3,3n data.csv | head -4"),
    same("tail -n +2 data.csv | sort -t, -k2 | head -3"),
    same("cut -d, -f4 data.csv | sort -u"),
    same("printf '10\\n9\\n100\\n1.5\\n' | sort -n; printf 'v1.10\\nv1.2\\nv1.9\\n' | sort -V"),
    same("printf '2K\\n1M\\n512\\n' | sort -h; printf 'b\\nA\\na\\nB\\n' | sort -f"),
    same("sort -c docs/a.txt; echo $?; sort docs/a.txt docs/b.txt | uniq -d"),
    same("cat docs/a.txt docs/b.txt | sort | uniq -u"),
    same("tr a-z A-Z < README.md | head -3"),
    same("tr '[:lower:]' '[:upper:]' < docs/a.txt"),
    same("echo 'Hello, World! 123' | tr -cd '[:alnum:]\\n'"),
    same("cat docs/a.txt | tr '\\n' ' '; echo"),
    same("tr -d '\\r' < windows.txt | cat -A"),
    same("paste -d, docs/a.txt docs/b.txt; paste -d' ' - - < docs/a.txt"),
    same("comm -12 <(sort docs/a.txt) <(sort docs/b.txt); comm -3 <(sort docs/a.txt) <(sort docs/b.txt)"),
    same("join -t, <(printf '1,a\\n2,b\\n') <(printf '1,x\\n2,y\\n')"),
    same("column -t -s, data.csv | head -3"),
    // head, tail, wc, cat.
    same("head -n 3 app.log; head -5 data.csv"),
    same("head -c 20 data.csv; head -c 100 app.log | tail -c 20"),
    same("tail -n 2 app.log; tail -n +19 data.csv"),
    same("head -n 20 app.log | tail -n 5"),
    same("head -n -2 docs/a.txt"),
    same("head -n1 docs/a.txt docs/b.txt; tail -n1 docs/*.txt"),
    same("wc -l app.log; wc -l < app.log"),
    same("wc -w README.md; wc -c data.csv; wc -m README.md; wc -L README.md"),
    same("wc app.log; wc -l src/*.py"),
    same("cat empty.txt | wc -c; grep -c '' empty.txt; wc -l empty.txt; sort empty.txt | wc -l"),
    same("head -3 empty.txt; echo rc=$?"),
    same("cat -n notes.txt"),
    same("cat -A notes.txt; cat -s notes.txt; cat -T notes.txt"),
    same("cat -A windows.txt"),
    // GNU cat's long options: only the short -b is base64 in clix.
    same("cat --number-nonblank notes.txt; cat --number notes.txt"),
    same("cat --show-ends --show-tabs notes.txt; cat --squeeze-blank notes.txt"),
    same("cat --show-all windows.txt; cat --show-nonprinting windows.txt"),
    same("cat --number-nonblank --squeeze-blank --show-ends notes.txt"),
    same("cat --number-nonblank --number notes.txt; cat -n --number-nonblank notes.txt"),
    same("cat -e notes.txt; cat -t notes.txt; cat -vET windows.txt"),
    same("cat --squeeze notes.txt; cat --number-n notes.txt; cat --show-a windows.txt"),
    same("printf 'a\\n\\nb' | cat --number-nonblank - notes.txt"),
    same("cat --n notes.txt; echo rc=$?; cat --nosuch notes.txt; echo rc=$?"),
    same("grep -c beta windows.txt; grep -c 'beta$' windows.txt; echo rc=$?"),
    same("grep -n . windows.txt | cat -A"),
    same("while IFS= read -r l; do echo \"[$l]\"; done < windows.txt | cat -A"),
    same("sed 's/\\r$//' windows.txt > unix.txt && cat -A unix.txt"),
    same("seq 3 | cat -n; grep ERROR app.log | cat -n | tail -2"),
    same("tac docs/a.txt; nl docs/a.txt; nl -ba notes.txt"),
    // jq.
    same("jq .name config.json; jq -r .version config.json"),
    same("jq '.servers | length' config.json"),
    same("jq -r '.servers[].host' config.json"),
    same("jq '.servers | map(.port)' config.json"),
    same("jq -r '.servers[] | select(.enabled) | .name' config.json"),
    same("jq -r '.servers[] | select(.enabled == false) | .name' config.json"),
    same("jq '.servers[] | select(.port > 8080) | .name' config.json"),
    same("jq -c .database config.json; jq .database.pool.max config.json"),
    same("jq keys config.json"),
    same("jq '.servers[0]' config.json"),
    same("jq . <<< '[1,2,{\"a\":null}]'"),
    same("jq '.missing, .x.y.z, .tags[10]' config.json"),
    same("jq -e .missing config.json; echo rc=$?"),
    same("jq .name.foo config.json; echo rc=$?"),
    same("jq -r '.tags | join(\",\")' config.json"),
    same("jq '.features | to_entries | map(select(.value)) | map(.key)' config.json"),
    same("jq -c '.features | with_entries(select(.value))' config.json"),
    same("jq -r '.servers[] | \"\\(.name):\\(.port)\"' config.json"),
    same("jq -r '.servers[] | [.name, .port] | @tsv' config.json"),
    same("jq -r '.servers[] | [.name, .host] | @csv' config.json"),
    same("jq -c '.servers[] | {name, port}' config.json; jq '{name, version}' config.json"),
    same("jq 'has(\"debug\")' config.json"),
    same("jq -r '.servers | sort_by(.port) | reverse | .[0].name' config.json"),
    same("jq --arg n beta '.servers[] | select(.name == $n) | .port' config.json"),
    same("jq --argjson p 8081 -r '.servers[] | select(.port == $p) | .name' config.json"),
    same("jq '[.servers[].port] | add, max, min' config.json"),
    same("jq 'reduce .servers[] as $s (0; . + $s.port)' config.json"),
    same("jq -c '.servers | group_by(.enabled) | map(length)' config.json"),
    same("jq -r '.. | .port? // empty' config.json"),
    same("jq '.name | ascii_upcase, test(\"demo\"), split(\"-\")' config.json"),
    same("jq -c '.version | split(\".\") | map(tonumber)' config.json"),
    same("jq 'if .debug then \"dbg\" else \"prod\" end' config.json"),
    same("jq -c 'walk(if type == \"number\" then . + 1 else . end) | .database' config.json"),
    same("jq -S .database config.json; jq --tab .database.pool config.json"),
    same("jq '.tags += [\"new\"] | .tags' config.json"),
    same("jq 'del(.servers, .features) | keys' config.json"),
    same("jq '.version = \"2.0.0\"' config.json > tmp.json && mv tmp.json config.json && jq -r .version config.json"),
    same("jq -n '1 + 2'; jq -n --arg x 1 '{x: $x}'"),
    same("jq -s 'length' config.json config.json"),
    same("echo '{\"a\":[1,2,3]}' | jq '.a | map(. * 2)'"),
    same("jq '.servers[] | .name' -r config.json"),
    same("jq . empty.txt; echo rc=$?"),
    // Shell language.
    same("printf '%s=%d\\n' a 1 b 2"),
    same("printf '%05.2f|%-5s|%x\\n' 3.14159 ab 255"),
    same("printf '%.3f %e %5.1f%%\\n' 3.14159 12345 45.678"),
    same("printf '%-10s|\\n' left; printf '%10s|\\n' right; printf '%q\\n' 'a b'"),
    same("printf -v out '%03d' 7; echo $out"),
    same("echo -e 'a\\tb'; echo -n x; echo y; echo $'tab\\there'"),
    same("echo \"a\\tb\"; echo 'single $x'; echo \"double $((1+1))\""),
    same("echo $((1+2)) $((7/2)) $((7%3)) $((2**10)) $((-7 / 2)) $((1 << 4))"),
    same("echo $((16#ff)) $((0x10)) $((10 > 3)) $(( 3 > 2 ? 10 : 20 ))"),
    same("x=5; y=$(( x * 3 )); echo \"$x $y\"; ((x += 5)); ((x++)); echo $x"),
    same("expr 3 + 4; let z=6*7; echo $z; declare -i n=5; n+=3; echo $n"),
    same("n=$(wc -l < data.csv); echo \"rows: $n\"; echo $(( $(wc -l < data.csv) - 1 ))"),
    same("x=$(cat README.md | head -1); echo \"[$x]\"; echo \"$(ls | wc -l) entries\""),
    same("test -f app.log && echo yes || echo no; test -f nope.txt && echo yes || echo no"),
    same("[ -d src ] && echo dir; [ -s empty.txt ] || echo empty; test -e src/lib && echo exists"),
    same("[ -z \"$EMPTY\" ] && echo unset; [ \"a\" != \"b\" ] && echo differ; [ 10 -gt 9 ] && echo gt"),
    same("[[ abc == a* ]] && echo match; (( 2 > 1 )) && echo bigger"),
    same("x=123; [[ $x =~ ^[0-9]+$ ]] && echo num ${BASH_REMATCH[0]}"),
    same("s=v1.2.3; [[ $s =~ ^v([0-9]+)\\.([0-9]+) ]] && echo ${BASH_REMATCH[1]} ${BASH_REMATCH[2]}"),
    same("for f in docs/*.txt; do echo \"$f: $(wc -l < $f)\"; done"),
    same("for i in 1 2 3; do echo -n \"$i \"; done; echo"),
    same("for ((i=0; i<3; i++)); do echo $i; done"),
    same("for i in $(seq 1 10); do [ $i -eq 3 ] && continue; [ $i -gt 5 ] && break; echo $i; done"),
    same("for d in */; do echo \"$d: $(ls $d | wc -l)\"; done"),
    same("i=0; while [ $i -lt 3 ]; do i=$((i+1)); echo $i; done"),
    same("until [ -f done.txt ]; do touch done.txt; echo made; done"),
    same("while read line; do echo \"> $line\"; done < docs/a.txt"),
    same("while IFS=, read -r id name score dept; do echo \"$name:$dept\"; done < data.csv | head -4"),
    same("t=0; while IFS=, read -r _ _ s _; do t=$((t + s)); done < <(tail -n +2 data.csv); echo $t"),
    same("grep ERROR app.log | while read -r d t lvl rest; do echo $t; done | head -3"),
    same("ls | while read f; do [ -d \"$f\" ] && echo \"dir $f\"; done"),
    same("x=0; cat docs/a.txt | while read l; do x=$((x+1)); done; echo x=$x"),
    same("for f in a.log b.csv c.json; do case $f in *.log) echo log;; *.csv) echo csv;; *) echo other;; esac; done"),
    same(
        "for a in start stop foo; do case $a in start|begin) echo go;; stop) echo halt;; *) echo \"$a?\";; esac; done",
    ),
    same("greet() { local who=$1; echo \"hi $who\"; return 2; }; greet bob; echo rc=$?"),
    same("f() { echo \"$# args: $@\"; shift; echo \"now $1\"; }; f a b c"),
    same("fact() { [ $1 -le 1 ] && echo 1 || echo $(( $1 * $(fact $(( $1 - 1 ))) )); }; fact 5"),
    same("getopts_test() { while getopts 'ab:' o; do echo \"$o=$OPTARG\"; done; }; getopts_test -a -b val"),
    same("arr=(a b c); echo ${#arr[@]} ${arr[1]}; for x in \"${arr[@]}\"; do echo $x; done"),
    same("arr=(a b c); arr+=(d); unset 'arr[1]'; echo ${arr[@]} ${#arr[@]} ${arr[-1]}"),
    same("arr=(a b c d); echo \"${arr[@]:1:2}\"; v=arr; echo ${!v}"),
    same("arr=(x y); printf '%s\\n' \"${arr[@]/#/pre-}\""),
    same("files=(*.txt); printf '%s\\n' \"${files[@]}\""),
    same("declare -A m=([a]=1 [b]=2); echo ${m[b]}; for k in \"${!m[@]}\"; do echo $k; done | sort"),
    same("mapfile -t lines < docs/a.txt; echo ${#lines[@]} ${lines[2]}"),
    same("IFS=, read -ra parts <<< 'x,y,z'; echo ${parts[1]} ${#parts[@]}"),
    same("IFS=,; set -- $(head -1 data.csv); echo $# $2"),
    same("read a b <<< 'one two three'; echo $b; read -r first rest < data.csv; echo $first"),
    same("exec 3< docs/a.txt; read -u 3 l; echo $l"),
    same("f=src/lib/helpers.js; echo ${f##*/} ${f%.js} ${f/lib/pkg} ${#f}"),
    same("f=report.tar.gz; echo ${f#*.} ${f%%.*} ${f/%gz/xz}"),
    same("s=Hello; echo ${s^^} ${s,,} ${s:1:3}; t='hello world'; echo ${t// /_} ${t^}"),
    same("echo ${UNSET:-default} ${EMPTY:=set}; unset x; echo ${x-unset} ${x+set}"),
    same("str='a b  c'; echo $str; echo \"$str\"; echo $(echo '  spaced   out  ')"),
    same("echo *.json; echo *.xyz; for f in *.xyz; do echo \"got $f\"; done"),
    same("shopt -s nullglob; echo *.xyz none"),
    same("shopt -s globstar; ls **/*.py"),
    same("echo {a,b}.txt {01..03} {1..10..3}; printf '%s\\n' {1..5} | tail -2"),
    same("true && echo a; false || echo b; false; echo $?; ! true; echo $?"),
    same("(exit 5); echo $?; false | true; echo ${PIPESTATUS[@]}"),
    same("set -e; false; echo unreachable"),
    same("set -e; if false; then :; fi; false || true; echo ok"),
    same("set -e; x=$(false); echo no"),
    same("set -o pipefail; false | true; echo $?"),
    same("set -eo pipefail; false | true; echo no"),
    same("set -euo pipefail; echo start; grep nomatch app.log; echo end"),
    same("readonly R=1; R=2; echo $?"),
    same("exit 3"),
    same("cat missing.txt"),
    same("unknowncmd; echo $?"),
    same("cd nope; echo $?"),
    same("pwd; (cd src && pwd); pwd"),
    same("cd src && ls && cd .. && pwd"),
    same("cd src/lib && pwd && cd - && pwd"),
    same("pushd src >/dev/null; pwd; popd >/dev/null; pwd"),
    same("trap 'echo bye' EXIT; echo hi"),
    same("trap 'echo caught' ERR; false; echo after"),
    // The job prints once `fg` is out (it waits for the file): the order
    // holds however the two are scheduled, not only after 0.2 s of sleep.
    same("(while [ ! -e fg.done ]; do sleep 0.05; done; echo bg) & echo fg; touch fg.done; wait"),
    same("sleep 0.1 & wait $!; echo done $?"),
    same("cmd='ls src'; eval \"$cmd\""),
    same("echo 'echo sourced $1' > s.sh && source s.sh a && . ./s.sh b"),
    same("printf '#!/bin/bash\\necho script $1\\n' > run.sh && chmod +x run.sh && ./run.sh arg"),
    same("printf 'echo in bash $1\\n' > run.sh && bash run.sh x"),
    same("bash -c 'echo nested; exit 4'; echo rc=$?"),
    same("export X=1; bash -c 'echo X=$X'; FOO=bar printenv FOO"),
    same("timeout 5 echo hi"),
    same("wc -c <<< 'hello'; cat <(echo hi); head -c 5 <<< hello_world; echo"),
    // Other tools agents reach for.
    same("ls"),
    same("ls src; ls -1 docs; ls docs | wc -l"),
    same("ls -A src"),
    same("ls -R src"),
    same("ls -d */; ls -F src"),
    same("ls *.txt docs"),
    same("ls nonexist; echo $?"),
    same("diff docs/a.txt docs/b.txt; echo rc=$?"),
    same("diff -q docs/a.txt docs/c.txt; echo rc=$?; diff --brief docs/a.txt docs/b.txt"),
    same("diff -u docs/a.txt docs/b.txt | tail -n +3"),
    same("diff <(sort docs/a.txt) <(sort docs/c.txt) && echo identical"),
    same("cmp docs/a.txt docs/b.txt; echo rc=$?"),
    same("basename src/lib/helpers.js .js; dirname src/lib/helpers.js; basename -s .py src/main.py src/util.py"),
    same("realpath src/main.py; readlink -f src/../data.csv; dirname $(realpath src/lib/helpers.js)"),
    same("seq 1 5; seq 10 -3 1; seq -s, 5; seq -w 1 10 | tail -2; seq 0.5 0.5 2"),
    same("seq -w 8 11; seq -3 2 5; seq 5 -2 -4; seq 1 2.5; seq -w -5 5; seq 2 1"),
    same("seq 5 | paste -sd+ | bc; echo 'scale=2; 10/3' | bc"),
    same("yes | head -3; echo abcdef | rev; echo abcdefghij | fold -w3"),
    same("expr length abcd; expr substr hello 2 3"),
    same("stat -c '%s %n' data.csv; du -b data.csv"),
    same("sha256sum data.csv; md5sum docs/*.txt; sha1sum docs/a.txt; cksum docs/a.txt"),
    same("md5sum docs/a.txt > sums && md5sum -c sums"),
    same("echo hello | base64; base64 docs/d.txt | base64 -d"),
    same("xxd docs/d.txt; hexdump -C docs/d.txt"),
    same("od -c windows.txt | head -2; od -An -tx1 windows.txt | head -1; tail -c 10 data.csv | od -c"),
    same("numfmt --to=iec 1048576"),
    // Known differences: see docs/differential.md.
    known("ls -a src", "bashkit's ls -a omits the `.` and `..` entries"),
    known("ls -S docs", "bashkit's ls lacks -S (sort by size): exit 2, no output"),
    known("ls -r docs", "bashkit's ls lacks -r (reverse order): exit 2, no output"),
    known("ls -p", "bashkit's ls lacks -p (slash after directories): exit 2, no output"),
    known("wc -l *", "bashkit's wc prints no counts at all when one operand is a folder"),
    known("cp -r src s2 && echo x >> s2/util.py && diff -r src s2; echo rc=$?", "bashkit's diff lacks -r: exit 2"),
    known("set -u; echo $NOPE; echo after", "an unbound variable under set -u exits 1; bash exits 127"),
    known("echo ${NOPE:?not set}; echo after", "${var:?msg} on an unset variable exits 1; bash exits 127"),
    known("find . -name '*.nomatch' | xargs rm; echo $?", "xargs on empty input: GNU exits 123, bashkit 1"),
    known("sort -u docs/b.txt > docs/b.txt; wc -l < docs/b.txt", "bash truncates the `>` target first; bashkit after"),
    // Security round 4, finding 12: answers that came back short with exit 0.
    same("echo {1..1000}{1..1000} | wc -w; echo {a,b}{c,d}{1..3} x{1..3}y{,z}"),
    same("head -c 6000000 /dev/zero | wc -c; head -c 100000 /dev/urandom | wc -c; head -c 16 /dev/urandom | wc -c"),
];

/// Writes the fixture project into `dir`. Deterministic: no clock, no randomness.
fn write_fixture(dir: &Path) {
    let users = ["alice", "bob", "carol", "dave", "erin"];
    let mut log = String::new();
    for i in 0..300u32 {
        let (m, s) = ((i * 7) / 60, (i * 7) % 60);
        let user = users[((i * i) % 11 % 5) as usize];
        let entry = match i {
            150 => "ERROR [disk] disk full on /var/data".to_string(),
            151 | 152 => format!("INFO [disk] cleanup pass {} user={user}", i - 150),
            299 => "INFO [main] shutdown complete".to_string(),
            _ if i % 23 == 0 => format!("ERROR [db] connection timeout user={user}"),
            _ if i % 7 == 0 => format!("WARN [db] slow query took {}ms", 900 + i * 3),
            _ if i % 5 == 0 => format!("INFO [auth] login ok user={user}"),
            _ => format!("INFO [api] request handled user={user} path=/api/items/{}", i % 9),
        };
        log.push_str(&format!("2024-03-01 10:{m:02}:{s:02} {entry}\n"));
    }
    let depts = ["eng", "sales", "ops"];
    let names = [
        "ann", "ben", "cara", "dan", "eve", "finn", "gus", "hana", "ivan", "jo", "kim", "liam", "mia", "ned", "olga",
        "pia", "quin", "rosa", "sam", "tara",
    ];
    let mut csv = String::from("id,name,score,dept\n");
    for (i, name) in names.iter().enumerate() {
        let score = (i * 37 + 11) % 100;
        csv.push_str(&format!("{},{name},{score},{}\n", i + 1, depts[(i * i + i / 3) % 3]));
    }
    let files: &[(&str, &str)] = &[
        ("app.log", &log),
        ("data.csv", &csv),
        ("config.json", CONFIG_JSON),
        ("src/main.py", MAIN_PY),
        ("src/util.py", UTIL_PY),
        ("src/lib/helpers.js", HELPERS_JS),
        ("README.md", README_MD),
        ("notes.txt", "Meeting notes  \n\nalpha release on Monday \n\n\n- fix login bug\t\n- write docs\n"),
        ("windows.txt", "alpha\r\nbeta\r\ngamma\r\n"),
        ("empty.txt", ""),
        ("docs/a.txt", "alpha\nbeta\ngamma\ndelta\n"),
        ("docs/b.txt", "alpha\nbravo\ngamma\ndelta\necho\n"),
        ("docs/c.txt", "alpha\nbeta\ngamma\ndelta\n"),
        ("docs/d.txt", "beta only\n"),
    ];
    for (rel, body) in files {
        let path = dir.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, body).unwrap();
    }
}

const CONFIG_JSON: &str = r#"{
  "name": "clix-demo",
  "version": "1.4.2",
  "debug": false,
  "database": {
    "host": "localhost",
    "port": 5432,
    "pool": { "min": 2, "max": 10 }
  },
  "servers": [
    { "name": "alpha", "host": "10.0.0.1", "port": 8080, "enabled": true },
    { "name": "beta", "host": "10.0.0.2", "port": 8081, "enabled": false },
    { "name": "gamma", "host": "10.0.0.3", "port": 9090, "enabled": true }
  ],
  "features": { "search": true, "export": false, "beta": true },
  "tags": ["web", "api", "internal"]
}
"#;

const MAIN_PY: &str = "\
import sys
from util import load, summarize


def main(argv):
    # TODO: parse flags properly
    data = load(argv[1])
    print(summarize(data))
    return 0


if __name__ == \"__main__\":
    sys.exit(main(sys.argv))
";

const UTIL_PY: &str = "\
import csv
import json


def load(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def summarize(rows):
    # TODO: handle empty input
    return json.dumps({\"rows\": len(rows)})
";

const HELPERS_JS: &str = "\
import fs from 'fs';

// TODO: cache results
export function readConfig(path) {
  return JSON.parse(fs.readFileSync(path, 'utf8'));
}

export function port(cfg) {
  return cfg.database.port;
}
";

const README_MD: &str = "\
# clix demo

A small project used by the differential test.

## Usage

Run `python src/main.py data.csv` to print a summary.

## Files

- app.log: service log
- data.csv: scores per person
- config.json: settings
";

/// Runs `case` on two fresh copies of the fixture; returns a report when it fails.
fn check(case: &Case, home: &Path) -> Option<String> {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (ws_clix, ws_bash) = (a.path().canonicalize().unwrap(), b.path().canonicalize().unwrap());
    write_fixture(&ws_clix);
    write_fixture(&ws_bash);
    let clix = run_clix(case.line, &ws_clix, home, &[]);
    let bash = run_bash(case.line, &ws_bash);
    let differ = clix.stdout != bash.stdout || clix.code != bash.code;
    let problem = match case.expect {
        Same if differ => "differs from bash".to_string(),
        Known(why) if !differ => format!("now matches bash, move this case back to `Same` (was Known: {why})"),
        _ => return None,
    };
    Some(format!(
        "--- {problem}\nline: {}\nbash stdout (exit {:?}):\n{}\nclix stdout (exit {:?}):\n{}",
        case.line, bash.code, bash.stdout, clix.code, clix.stdout
    ))
}

#[test]
fn clix_matches_bash() {
    let home_dir = tempfile::tempdir().unwrap();
    let home = home_dir.path();
    // Cases are independent: a few threads share them in order-preserving chunks.
    let chunk = CASES.len().div_ceil(4);
    let failures: Vec<String> = std::thread::scope(|s| {
        let workers: Vec<_> = CASES
            .chunks(chunk)
            .map(|cases| s.spawn(move || cases.iter().filter_map(|c| check(c, home)).collect::<Vec<_>>()))
            .collect();
        workers.into_iter().flat_map(|w| w.join().unwrap()).collect()
    });
    assert!(failures.is_empty(), "{} of {} cases failed:\n{}", failures.len(), CASES.len(), failures.join("\n"));
}
