//! Issue 11: what the workspace capability handle costs. bashkit's own
//! `RealFs` (check a path, then open it again by name: racy) against clix's
//! shell over the `clix-workspace` handle (one `openat2(RESOLVE_BENEATH)`
//! per access), call by call in one process.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use clix_shell::{CommandRegistry, Shell, ShellConfig, ShellLimits, Workspace};

use crate::{fmt, stats, write_fixture};

/// Files in the `grep -r` tree: 40 folders of 50.
const TREE_DIRS: usize = 40;
const FILES_PER_DIR: usize = 50;

pub(crate) fn jail(iterations: usize) {
    let ws = tempfile::tempdir().expect("temp dir");
    let line_expected = write_fixture(ws.path());
    let tree_expected = write_tree(ws.path());
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    runtime.block_on(async {
        let canonical = std::fs::canonicalize(ws.path()).expect("canonical");
        let real = bashkit::RealFs::open(&canonical, bashkit::RealFsMode::ReadWrite).await.expect("realfs");
        let mut realfs =
            bashkit::Bash::builder().cwd(&canonical).session_limits(bashkit::SessionLimits::unlimited()).build();
        realfs.mount(&canonical, Arc::new(bashkit::PosixFs::new(real))).expect("mount");
        let mut handle = Shell::new(ShellConfig {
            workspace: Workspace::open(&canonical).expect("workspace"),
            limits: ShellLimits::default(),
            commands: CommandRegistry::new(),
            resolver: None,
            gate: None,
            start_in: None,
        })
        .await
        .expect("session");

        println!("the workspace capability handle vs bashkit's RealFs (warm, interleaved call by call)\n");
        println!("| line | RealFs p50 / p95 | capability handle p50 / p95 | handle / RealFs (p50) |");
        println!("|---|---|---|---|");
        let grep_line = "grep -r -c needle tree | grep -v ':0$' | wc -l";
        for (line, expected, n) in
            [(crate::LINE, line_expected, iterations), (grep_line, tree_expected, (iterations / 20).max(20))]
        {
            let (mut a, mut b) = (Vec::with_capacity(n), Vec::with_capacity(n));
            for _ in 0..n {
                let t = Instant::now();
                let r = realfs.exec(line).await.expect("bashkit");
                a.push(t.elapsed());
                assert_eq!(r.stdout, expected, "RealFs: {}", r.stderr);
                let t = Instant::now();
                let r = handle.exec(line, None).await;
                b.push(t.elapsed());
                assert_eq!(String::from_utf8_lossy(&r.stdout), expected, "{}", String::from_utf8_lossy(&r.stderr));
            }
            let (a, b) = (stats(a), stats(b));
            println!(
                "| `{}` ({n} calls) | {} / {} | {} / {} | {:.2}x |",
                line.replace('|', "\\|"),
                fmt(a.p50),
                fmt(a.p95),
                fmt(b.p50),
                fmt(b.p95),
                b.p50.as_secs_f64() / a.p50.as_secs_f64()
            );
        }
    });
}

/// 2,000 small files under `tree/`; every seventh holds the needle.
/// Returns what the grep line prints: how many files match.
fn write_tree(ws: &Path) -> String {
    let mut matching = 0;
    for d in 0..TREE_DIRS {
        let dir = ws.join("tree").join(format!("d{d:02}"));
        std::fs::create_dir_all(&dir).expect("tree");
        for f in 0..FILES_PER_DIR {
            let n = d * FILES_PER_DIR + f;
            let hit = n.is_multiple_of(7);
            matching += usize::from(hit);
            let body =
                format!("file {n}\n{}\nsome padding text for the line\n", if hit { "a needle here" } else { "hay" });
            std::fs::write(dir.join(format!("f{f:03}.txt")), body.repeat(8)).expect("file");
        }
    }
    format!("{matching}\n")
}
