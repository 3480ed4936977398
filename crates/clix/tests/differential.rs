//! Differential test against GNU bash: every line in `CASES` runs once through
//! `clix run --raw` and once through `bash -c`, each on its own fresh copy of the
//! same fixture project, and stdout plus exit code must match. Stderr is not
//! compared: error wording legitimately differs.
//!
//! Lines where bashkit is known to differ are marked `Known(why)`; for those the
//! test asserts the outputs still differ, so the record stays true. See
//! docs/differential.md. Run: `cargo test -p clix --test differential`.

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};

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
    // Pipelines and grep.
    same("cat app.log | grep ERROR | wc -l"),
    same("grep -c WARN app.log"),
    same("grep -n 'disk full' app.log"),
    same("grep -i 'error' app.log | head -3"),
    same("grep -v INFO app.log | wc -l"),
    same("grep -E 'ERROR|WARN' app.log | tail -3"),
    same("grep -m1 ERROR app.log"),
    same("grep -q ERROR app.log && echo found"),
    same("grep -c nosuchthing app.log; echo rc=$?"),
    same("grep -o 'user=[a-z]*' app.log | sort | uniq -c | sort -rn"),
    same("grep -n -A2 'disk full' app.log"),
    same("grep -B1 -n 'shutdown' app.log"),
    same("grep -r 'def ' src | sort"),
    same("grep -rl 'import' . | sort"),
    same("grep -rn TODO --include='*.py' . | sort"),
    same("grep -l ERROR *.log *.txt"),
    same("grep -w 'eng' data.csv | wc -l"),
    same("grep -c . notes.txt"),
    same("grep -c '' notes.txt"),
    same("grep -h alpha docs/*.txt"),
    same("grep -H beta docs/*.txt"),
    same("grep -oE '[0-9]+ms' app.log | sort -n | tail -1"),
    same("cat src/main.py | grep -n import"),
    // find and xargs.
    same("find . -name '*.py' | sort"),
    same("find . -type f | sort"),
    same("find . -type d | sort"),
    same("find . -maxdepth 1 -type f | sort"),
    same("find . -empty | sort"),
    same("find src -name '*.js' -o -name '*.py' | sort"),
    same("find . -type f -name '*.txt' | xargs wc -l | sort"),
    same("find . -name '*.txt' -exec wc -l {} \\; | sort"),
    same("find . -name '*.py' -print0 | xargs -0 grep -c def | sort"),
    same("seq 3 | xargs -I{} echo item-{}"),
    same("ls docs/*.txt | xargs -I{} basename {}"),
    same("echo a b c d | xargs -n2"),
    // Heredocs, redirections, files.
    same("cat > out.txt <<'EOF'\nline one\n$HOME stays literal\nEOF\ncat out.txt"),
    same("name=world; cat <<EOF\nhello $name\n$(echo sub)\nEOF"),
    same("echo hello > out.txt && echo world >> out.txt && cat out.txt"),
    same("echo hi | tee t.txt; cat t.txt"),
    same("cat missing.txt 2>&1 | wc -l"),
    same("ls nope 2>/dev/null || echo none"),
    same("{ echo out; echo err >&2; } 2>&1 | sort"),
    same("echo err >&2; echo done"),
    same("touch new.txt && ls new.txt && rm new.txt && ls new.txt 2>/dev/null; echo $?"),
    same("cp data.csv copy.csv && cmp data.csv copy.csv && echo same"),
    same("mv notes.txt notes.md && ls *.md"),
    same("rm -rf docs && ls"),
    same("mkdir -p a/b && touch a/b/c && find a | sort"),
    // sed.
    same("sed -i 's/localhost/127.0.0.1/' config.json && grep 127 config.json"),
    same("sed -n '1,5p' data.csv"),
    same("sed 's/,/;/g' data.csv | head -3"),
    same("sed -n '/ERROR/p' app.log | wc -l"),
    same("sed '/^$/d' notes.txt"),
    same("sed -n '$p' data.csv"),
    same("sed -E 's/^([0-9]+),([a-z]+).*/\\2=\\1/' data.csv | tail -3"),
    // awk, cut, sort, uniq, tr.
    same("awk '{print $3}' app.log | sort | uniq -c | sort -rn"),
    same("awk -F, 'NR>1 {sum+=$3} END {print sum}' data.csv"),
    same("awk -F, '$4==\"eng\" {print $2}' data.csv"),
    same("awk '/ERROR/ {n++} END {print n}' app.log"),
    same("awk 'length > 75' app.log | wc -l"),
    same("awk -F, '{print NF}' data.csv | sort -u"),
    same("awk -F, 'NR>1 {s[$4]+=$3} END {for (d in s) print d, s[d]}' data.csv | sort"),
    same("awk -F, 'NR>1 {printf \"%-6s %5.1f\\n\", $2, $3/3}' data.csv | head -4"),
    same("cut -d, -f2 data.csv | head -5"),
    same("cut -d, -f4 data.csv | sort | uniq -c | sort -rn"),
    same("cut -c1-19 app.log | tail -1"),
    same("sort -t, -k3 -n data.csv | head -3"),
    same("sort -t, -k3 -rn data.csv | head -3"),
    same("tail -n +2 data.csv | sort -t, -k2 | head -3"),
    same("cut -d, -f4 data.csv | sort -u"),
    same("tr a-z A-Z < README.md | head -3"),
    same("echo 'a   b    c' | tr -s ' '"),
    same("tr -d '\\r' < windows.txt | cat -A"),
    // head, tail, wc, cat.
    same("head -n 3 app.log"),
    same("head -5 data.csv"),
    same("head -c 20 data.csv"),
    same("tail -n 2 app.log"),
    same("tail -n +19 data.csv"),
    same("head -n -2 docs/a.txt"),
    same("wc -l app.log"),
    same("wc -l < app.log"),
    same("wc -w README.md"),
    same("wc -c data.csv"),
    same("wc -l src/*.py"),
    same("wc app.log"),
    same("cat -n notes.txt"),
    same("cat -A notes.txt"),
    same("cat -A windows.txt"),
    same("grep -c beta windows.txt; grep -c 'beta$' windows.txt; echo rc=$?"),
    same("cat empty.txt | wc -c"),
    same("tac docs/a.txt"),
    same("nl docs/a.txt"),
    // jq.
    same("jq .name config.json"),
    same("jq -r .version config.json"),
    same("jq '.servers | length' config.json"),
    same("jq -r '.servers[].host' config.json"),
    same("jq '.servers | map(.port)' config.json"),
    same("jq -r '.servers[] | select(.enabled) | .name' config.json"),
    same("jq -c .database config.json"),
    same("jq keys config.json"),
    same("jq '.servers[0]' config.json"),
    same("jq .missing config.json"),
    same("jq -r '.tags | join(\",\")' config.json"),
    same("jq '.features | to_entries | map(select(.value)) | map(.key)' config.json"),
    same("jq -r '.servers[] | \"\\(.name):\\(.port)\"' config.json"),
    // Shell language.
    same("printf '%s=%d\\n' a 1 b 2"),
    same("printf '%05.2f|%-5s|%x\\n' 3.14159 ab 255"),
    same("echo $((1+2)) $((7/2)) $((7%3)) $((2**10))"),
    same("x=5; y=$(( x * 3 )); echo \"$x $y\""),
    same("n=$(wc -l < data.csv); echo \"rows: $n\""),
    same("test -f app.log && echo yes || echo no"),
    same("test -f nope.txt && echo yes || echo no"),
    same("[ -d src ] && echo dir; [ -s empty.txt ] || echo empty"),
    same("[[ abc == a* ]] && echo match"),
    same("for f in docs/*.txt; do echo \"$f: $(wc -l < $f)\"; done"),
    same("for i in 1 2 3; do echo -n \"$i \"; done; echo"),
    same("while read line; do echo \"> $line\"; done < docs/a.txt"),
    same("while IFS=, read -r id name score dept; do echo \"$name:$dept\"; done < data.csv | head -4"),
    same("grep ERROR app.log | while read -r d t lvl rest; do echo $t; done | head -3"),
    same("for f in app.log data.csv config.json; do case $f in *.log) echo \"$f log\";; *.csv) echo \"$f csv\";; *) echo \"$f other\";; esac; done"),
    same("greet() { local who=$1; echo \"hi $who\"; return 2; }; greet bob; echo rc=$?"),
    same("arr=(a b c); echo ${#arr[@]} ${arr[1]}; for x in \"${arr[@]}\"; do echo $x; done"),
    same("files=(*.txt); printf '%s\\n' \"${files[@]}\""),
    same("f=src/lib/helpers.js; echo ${f##*/} ${f%.js} ${f/lib/pkg} ${#f}"),
    same("echo ${UNSET:-default} ${EMPTY:=set}"),
    same("read a b <<< 'one two three'; echo $b"),
    same("echo -e 'a\\tb'; echo -n x; echo y"),
    same("true && echo a; false || echo b; false; echo $?"),
    same("set -e; false; echo unreachable"),
    same("set -e; if false; then :; fi; echo ok"),
    same("set -o pipefail; false | true; echo $?"),
    same("exit 3"),
    same("cat missing.txt"),
    same("(cd src && pwd); pwd"),
    same("cd src && ls && cd .. && pwd"),
    same("trap 'echo bye' EXIT; echo hi"),
    same("x=$(cat README.md | head -1); echo \"[$x]\""),
    same("expr 3 + 4; let z=6*7; echo $z"),
    // Other common tools.
    same("ls"),
    same("ls src"),
    same("ls docs | wc -l"),
    same("echo *.json"),
    same("diff docs/a.txt docs/b.txt; echo rc=$?"),
    same("diff -q docs/a.txt docs/c.txt; echo rc=$?"),
    same("basename src/lib/helpers.js .js; dirname src/lib/helpers.js"),
    same("seq 1 5"),
    same("seq 10 -3 1"),
    same("seq -s, 5"),
    same("paste -d, docs/a.txt docs/b.txt"),
    same("comm -12 <(sort docs/a.txt) <(sort docs/b.txt)"),
    same("sha256sum data.csv"),
    same("md5sum docs/*.txt"),
    same("echo hello | base64"),
    same("sort docs/a.txt docs/b.txt | uniq -d"),
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
        "ann", "ben", "cara", "dan", "eve", "finn", "gus", "hana", "ivan", "jo", "kim", "liam",
        "mia", "ned", "olga", "pia", "quin", "rosa", "sam", "tara",
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

const MAIN_PY: &str = "import sys\nfrom util import load, summarize\n\n\ndef main(argv):\n    # TODO: parse flags properly\n    data = load(argv[1])\n    print(summarize(data))\n    return 0\n\n\nif __name__ == \"__main__\":\n    sys.exit(main(sys.argv))\n";

const UTIL_PY: &str = "import csv\nimport json\n\n\ndef load(path):\n    with open(path) as f:\n        return list(csv.DictReader(f))\n\n\ndef summarize(rows):\n    # TODO: handle empty input\n    return json.dumps({\"rows\": len(rows)})\n";

const HELPERS_JS: &str = "import fs from 'fs';\n\n// TODO: cache results\nexport function readConfig(path) {\n  return JSON.parse(fs.readFileSync(path, 'utf8'));\n}\n\nexport function port(cfg) {\n  return cfg.database.port;\n}\n";

const README_MD: &str = "# clix demo\n\nA small project used by the differential test.\n\n## Usage\n\nRun `python src/main.py data.csv` to print a summary.\n\n## Files\n\n- app.log: service log\n- data.csv: scores per person\n- config.json: settings\n";

struct Outcome {
    stdout: String,
    code: Option<i32>,
}

/// Replaces the workspace's absolute path with `$WS`.
fn outcome(out: std::process::Output, ws: &Path) -> Outcome {
    let stdout = String::from_utf8_lossy(&out.stdout).replace(ws.to_str().unwrap(), "$WS");
    Outcome { stdout, code: out.status.code() }
}

fn run_clix(line: &str, ws: &Path, home: &Path) -> Outcome {
    let out = Command::new(env!("CARGO_BIN_EXE_clix"))
        .args(["run", "--raw", "--workspace"])
        .arg(ws)
        .arg(line)
        .env("CLIX_HOME", home)
        .stdin(Stdio::null())
        .output()
        .expect("spawn clix");
    outcome(out, ws)
}

fn run_bash(line: &str, ws: &Path) -> Outcome {
    let out = Command::new("bash")
        .args(["-c", line])
        .current_dir(ws)
        .env("LC_ALL", "C")
        .env_remove("PWD")
        .stdin(Stdio::null())
        .output()
        .expect("spawn bash");
    outcome(out, ws)
}

#[test]
fn clix_matches_bash() {
    let home = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for case in CASES {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (ws_clix, ws_bash) = (a.path().canonicalize().unwrap(), b.path().canonicalize().unwrap());
        write_fixture(&ws_clix);
        write_fixture(&ws_bash);
        let clix = run_clix(case.line, &ws_clix, home.path());
        let bash = run_bash(case.line, &ws_bash);
        let differ = clix.stdout != bash.stdout || clix.code != bash.code;
        let problem = match case.expect {
            Same if differ => "differs from bash",
            Known(_) if !differ => "now matches bash: move this case back to `Same`",
            _ => continue,
        };
        failures.push(format!(
            "--- {problem}\nline: {}\nbash (exit {:?}):\n{}\nclix (exit {:?}):\n{}",
            case.line, bash.code, bash.stdout, clix.code, clix.stdout
        ));
    }
    assert!(failures.is_empty(), "{} of {} cases failed:\n{}", failures.len(), CASES.len(), failures.join("\n"));
}
