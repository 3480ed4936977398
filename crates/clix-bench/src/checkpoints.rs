//! `checkpoints` (issue 51): what keeping every call's changes costs on the
//! scale suite's tree (30,000 files and the 1,000,000-row files), an engine
//! with checkpoints and one without taking turns call by call on the same
//! workspace, so drift hits both alike:
//! - per call, p50, when a Layer 1 command changed one file, when a program
//!   in the sandbox changed one file, and when nothing changed;
//! - the first checkpoint of a fresh workspace (every file read and kept),
//!   and the first call of a later clix on it (the tree listed whole);
//! - the store's growth over 100 calls that each change one line of one file.

use std::path::Path;
use std::time::Instant;

use clix_engine::{CheckpointSettings, Engine, EngineConfig, ShellLimits, WorkMode, WorkspaceControl};
use clix_testkit::scale::{Scale, write_workspace};

use crate::{fmt, stats};

/// Bytes under `dir`, as the disk holds them (4 KiB blocks for small files).
fn disk_bytes(dir: &Path) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    let (mut on_disk, mut content) = (0, 0);
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                pending.push(entry.path());
            } else {
                on_disk += meta.blocks() * 512;
                content += meta.len();
            }
        }
    }
    (on_disk, content)
}

fn config(ws: &Path, home: &Path, state: Option<&Path>) -> EngineConfig {
    let limits = ShellLimits { timeout_secs: 600, ..ShellLimits::default() };
    let mut config = crate::run_config(ws, home, limits);
    config.control = state.map(|state| WorkspaceControl {
        state_dir: state.to_path_buf(),
        run: "bench".into(),
        settings: CheckpointSettings::default(),
        mode: WorkMode::Auto,
        reviewer: None,
    });
    config
}

pub(crate) fn checkpoints(calls: usize) {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    runtime.block_on(measure(calls));
}

async fn measure(calls: usize) {
    let dir = tempfile::tempdir().expect("workspace");
    let ws = dir.path().canonicalize().expect("canonical");
    write_workspace(&ws, Scale::FULL).expect("the scale workspace");
    let (home, state) = (tempfile::tempdir().expect("home"), tempfile::tempdir().expect("state"));
    let store = clix_checkpoint_dir(state.path());

    let mut without = Engine::new(config(&ws, home.path(), None)).await.expect("engine");
    let mut with = Engine::new(config(&ws, home.path(), Some(state.path()))).await.expect("engine");
    without.run("true", None).await;
    let t = Instant::now();
    with.run("true", None).await;
    let first = t.elapsed();
    let (baseline_disk, baseline_content) = disk_bytes(&store);

    let cases: [(&str, &dyn Fn(usize) -> String); 3] = [
        ("a Layer 1 command changed one file", &|i| format!("echo {i} >> src/mod0/pkg0/f1.rs")),
        ("a program in the sandbox changed one file", &|i| {
            format!("python3 -c \"open('src/mod0/pkg1/f2.rs','a').write('{i}\\n')\"")
        }),
        ("nothing changed", &|_| "cat src/mod0/pkg2/f3.rs > /dev/null".to_string()),
    ];
    println!(
        "checkpoints on the scale suite's tree ({} files, {} rows; {calls} calls each, the two engines taking turns; {})\n",
        Scale::FULL.dirs * 100,
        Scale::FULL.rows,
        crate::machine_load()
    );
    println!("| call | without checkpoints p50 | with p50 | overhead p50 |");
    println!("|---|---|---|---|");
    for (name, line) in cases {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for i in 0..calls {
            let t = Instant::now();
            without.run(&line(i), None).await;
            a.push(t.elapsed());
            let t = Instant::now();
            let out = with.run(&line(i), None).await;
            b.push(t.elapsed());
            assert!(out.changes.problem.is_none(), "{:?}", out.changes.problem);
        }
        let (a, b) = (stats(a).p50, stats(b).p50);
        // Signed: where the difference is within the machine's noise, it says so.
        let overhead = if b >= a { format!("+{}", fmt(b - a)) } else { format!("\u{2212}{}", fmt(a - b)) };
        println!("| {name} | {} | {} | {overhead} |", fmt(a), fmt(b));
    }

    // 100 calls that each change one line of one file (a 20-line file).
    let lines: String = (0..20).map(|i| format!("line {i}\n")).collect();
    std::fs::write(ws.join("src/mod0/pkg3/edited.txt"), &lines).expect("write");
    with.run("true", None).await;
    let (before_disk, before_content) = disk_bytes(&store);
    for i in 0..100 {
        with.run(&format!("sed -i 's/^line {}$/line {} changed/' src/mod0/pkg3/edited.txt", i % 20, i), None).await;
    }
    let (after_disk, after_content) = disk_bytes(&store);
    drop(with);

    // A later clix on the same workspace: the tree listed whole, nothing read again.
    let t = Instant::now();
    let mut later = Engine::new(config(&ws, home.path(), Some(state.path()))).await.expect("engine");
    later.run("true", None).await;
    let later_first = t.elapsed();

    println!();
    println!("| the first checkpoint of the fresh tree (every file read and kept) | {} |", fmt(first));
    println!(
        "| its store | {:.1} MB of contents, {:.1} MB on disk |",
        baseline_content as f64 / 1e6,
        baseline_disk as f64 / 1e6
    );
    println!("| a later clix's first call (engine start + the tree listed whole) | {} |", fmt(later_first));
    println!(
        "| store growth over 100 calls changing one line of a 20-line file | {} bytes of contents ({} per call), {} bytes on disk |",
        after_content - before_content,
        (after_content - before_content) / 100,
        after_disk - before_disk
    );
}

fn clix_checkpoint_dir(state: &Path) -> std::path::PathBuf {
    state.join("checkpoints")
}
