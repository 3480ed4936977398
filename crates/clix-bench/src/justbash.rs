//! `justbash DIR` (issue 29): just-bash's recorded comparison cases
//! (vercel-labs/just-bash, `packages/just-bash/src/comparison-tests/fixtures/*.json`:
//! files + command → GNU bash's stdout and exit code) through clix's Layer 1,
//! each in a fresh workspace. Prints the score and the failing cases, so a
//! change to Layer 1 can be checked against the score before it (721 of 778
//! on 2026-12-02). The cases are not in this repository: pass the folder.

use std::collections::BTreeMap;
use std::path::Path;

use clix_engine::{Engine, ShellLimits};
use serde::Deserialize;

#[derive(Deserialize)]
struct Case {
    command: String,
    #[serde(default)]
    files: BTreeMap<String, String>,
    stdout: String,
    #[serde(rename = "exitCode")]
    exit_code: i32,
}

pub(crate) fn justbash(dir: &Path) {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("the fixtures folder")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    let (mut passed, mut total) = (0, 0);
    let mut failed = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("fixture file");
        let cases: BTreeMap<String, Case> = serde_json::from_str(&text).expect("fixture JSON");
        for (id, case) in cases {
            total += 1;
            if runtime.block_on(passes(&case)) {
                passed += 1;
            } else {
                let name = file.file_name().unwrap_or_default().to_string_lossy().into_owned();
                failed.push(format!("{name} {id}: {}", case.command.replace('\n', "\\n")));
            }
        }
    }
    println!("just-bash comparison cases: {passed} of {total} give bash's stdout and exit code\n");
    for f in failed {
        println!("- {f}");
    }
}

async fn passes(case: &Case) -> bool {
    let dir = tempfile::tempdir().expect("workspace");
    let ws = dir.path().canonicalize().expect("canonical");
    for (name, body) in &case.files {
        let path = ws.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("fixture folder");
        }
        std::fs::write(path, body).expect("fixture file");
    }
    let limits = ShellLimits { timeout_secs: 10, ..ShellLimits::default() };
    let mut engine = Engine::new(crate::shell_config(&ws, limits)).await.expect("engine");
    let raw = engine.run_raw(&case.command, None).await;
    raw.stdout == case.stdout.as_bytes() && raw.exit_code == case.exit_code
}
