//! `--solution` from the command line until `clix eval` is wired:
//!
//! ```text
//! cargo run -p clix-eval --example solution -- evals/core.jsonl [--design run] [--filter RE] [--out DIR] [--keep]
//! ```
//!
//! Prints the summary and per-task Markdown tables and every problem found
//! (a solution that fails, a do-nothing run that passes); exits 1 when there
//! is one.

use std::path::PathBuf;
use std::process::ExitCode;

use clix_eval::{Design, SolutionRun, load_suites, problems, run_solutions};

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

async fn run() -> Result<ExitCode, String> {
    let mut suites = Vec::new();
    let mut designs = Vec::new();
    let mut filter = None;
    let mut out = None;
    let mut keep = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--design" => designs.push(value("--design")?.parse::<Design>()?),
            "--filter" => filter = Some(regex::Regex::new(&value("--filter")?).map_err(|e| e.to_string())?),
            "--out" => out = Some(PathBuf::from(value("--out")?)),
            "--keep" => keep = true,
            _ if arg.starts_with("--") => return Err(format!("unknown option {arg}")),
            _ => suites.push(PathBuf::from(arg)),
        }
    }
    if suites.is_empty() {
        return Err("usage: solution SUITE… [--design D] [--filter RE] [--out DIR] [--keep]".into());
    }
    let mut tasks = load_suites(&suites).map_err(|e| e.to_string())?;
    if let Some(filter) = &filter {
        tasks.retain(|t| filter.is_match(&t.id));
    }
    let mut run = SolutionRun::default();
    if !designs.is_empty() {
        run.designs = designs;
    }
    run.options.keep = keep;
    let results = run_solutions(&tasks, &suites, &run).await;
    println!("{}", results.markdown());
    println!("{}", results.comparison_markdown());
    println!("{}", results.per_task_markdown());
    for (design, bytes) in &results.definition_bytes {
        println!("tool definitions of {design}: {bytes} bytes");
    }
    for skip in &results.skipped {
        let design = skip.design.map_or("every design".to_string(), |d| d.to_string());
        println!("skipped {} in {design}: {}", skip.task, skip.reason);
    }
    if let Some(dir) = out {
        let path = results.write(&dir).map_err(|e| e.to_string())?;
        println!("wrote {}", path.display());
    }
    let problems = problems(&results);
    for p in &problems {
        println!("PROBLEM {p}");
    }
    Ok(if problems.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
