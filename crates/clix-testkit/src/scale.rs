//! The scale suite's table and workspace (issue 29), shared by the test
//! that runs it against GNU bash at a size CI affords
//! (`crates/clix/tests/scale.rs`) and by `clix-bench scale`, which runs it
//! at full size with the times.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;

/// Everyday lines over a real repository's sizes: tree walks, generated
/// streams, large files, loops over lines. Lines run in this order on each
/// workspace, so what one writes the next ones see alike. Every line needs
/// more than 2 KiB of memory or more than a second at the test's size
/// (`find src -type d` prints 4 KB: a walk that needs no more is quick).
pub const LINES: &[&str] = &[
    // Tree walks.
    "find . -type f | wc -l",
    "find src -name '*.txt' | sort | tail -3",
    "find src -type d | wc -l",
    "find . -type f -name '*.rs' | xargs grep -l 'fn f3()' | wc -l",
    "grep -rl TODO src | sort | head -3",
    "grep -rc TODO src | grep -vc ':0$'",
    "du -a src | wc -l",
    "ls -R src | wc -l",
    // Generated streams.
    "seq 1 300000 | tail -1",
    "seq 1 300000 > gen.txt; wc -l < gen.txt; tail -1 gen.txt",
    "yes | head -n 200000 | wc -l",
    "yes abc | head -c 3000000 | wc -c",
    "printf '%s\\n' {1..100000} | tail -1",
    "echo {1..200000} | wc -w",
    "seq 1 1000000 | awk '{s+=$1} END {printf \"%.0f\\n\", s}'",
    "awk 'BEGIN {for (i = 0; i < 500000; i++) a[i] = i; for (k in a) n++; print n}'",
    "for i in $(seq 1 100000); do :; done; echo $i",
    "seq 1 200000 | xargs -n 1000 echo | wc -l",
    // Large files.
    "wc -l big.txt data.csv",
    "grep -c ERROR big.txt",
    "sed -n '50000,50003p' big.txt",
    "sed 's/ok/OK/g' big.txt | grep -c OK",
    "sort -t, -k3 -n data.csv | tail -3",
    "cut -d, -f2 data.csv | sort | uniq -c | sort -rn | head -3",
    "awk -F, 'NR > 1 {s += $3} END {printf \"%.2f\\n\", s}' data.csv",
    "jq length items.json",
    "jq '[.[] | .amount] | add' items.json",
    // Loops over lines.
    "n=0; while read -r line; do n=$((n+1)); done < big.txt; echo $n",
    "while read -r a b c rest; do echo \"$c\"; done < big.txt | sort | uniq -c",
];

/// How big the generated workspace is.
#[derive(Debug, Clone, Copy)]
pub struct Scale {
    /// Folders of the tree under `src/`, 100 files each.
    pub dirs: usize,
    /// Lines of `big.txt`, rows of `data.csv`, elements of `items.json`.
    pub rows: usize,
}

impl Scale {
    /// What CI runs: 20,000 files, 100,000 rows.
    pub const CI: Scale = Scale { dirs: 200, rows: 100_000 };
    /// The ordinary workspace: 30,000 files, 1,000,000 rows.
    pub const FULL: Scale = Scale { dirs: 300, rows: 1_000_000 };
}

/// Files in each folder of the tree.
const FILES_PER_DIR: usize = 100;

/// Writes the scale workspace into `dir`. Deterministic.
pub fn write_workspace(dir: &Path, scale: Scale) -> std::io::Result<()> {
    for d in 0..scale.dirs {
        let folder = dir.join(format!("src/mod{}/pkg{d}", d / 20));
        fs::create_dir_all(&folder)?;
        for f in 0..FILES_PER_DIR {
            let ext = if f % 3 == 0 { "txt" } else { "rs" };
            let todo = if (d + f) % 7 == 0 { "// TODO fix\n" } else { "" };
            fs::write(folder.join(format!("f{f}.{ext}")), format!("fn f{f}() {{}}\n{todo}"))?;
        }
    }
    let (mut big, mut csv, mut json) = (String::new(), String::from("id,name,amount\n"), String::from("["));
    for i in 0..scale.rows {
        let level = if i % 13 == 0 { "ERROR" } else { "ok" };
        let _ = writeln!(big, "line {i} {level} value={}", i * 7 % 1000);
        let _ = writeln!(csv, "{i},user{},{}.{:02}", i % 977, i % 1000, i % 100);
        let sep = if i == 0 { "" } else { "," };
        let _ = write!(json, "{sep}{{\"id\":{i},\"amount\":{}}}", i % 1000);
    }
    json.push_str("]\n");
    for (name, body) in [("big.txt", big), ("data.csv", csv), ("items.json", json)] {
        fs::write(dir.join(name), body)?;
    }
    Ok(())
}
