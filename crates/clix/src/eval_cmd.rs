//! `clix eval SUITE… --solution`: the eval harness (clix-eval) for people
//! and CI. Each task's reference solution is played through each tool
//! design (`run`, `bash`, `typed`), its checks must pass, and doing nothing
//! must fail; the tables say what each design sent back.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clix_config::Paths;
use clix_eval::{Design, SolutionRun, load_suites, problems, run_solutions};

use crate::cli::outln;
use crate::settings;

#[derive(clap::Args)]
pub(crate) struct EvalArgs {
    /// Suite files (.jsonl, one task per line) or folders of them, e.g. evals/core.jsonl.
    #[arg(required = true, value_name = "SUITE")]
    suites: Vec<PathBuf>,
    /// Play each task's reference solution instead of a model; doing nothing must fail.
    #[arg(long)]
    solution: bool,
    /// A tool design: run, bash or typed (repeatable; default: all three).
    #[arg(long = "tools", value_name = "DESIGN")]
    tools: Vec<String>,
    /// Only the tasks whose id matches this regular expression.
    #[arg(long, value_name = "RE")]
    filter: Option<String>,
    /// Write results.json into this folder.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Print the results as JSON (results.json's schema) instead of tables.
    #[arg(long)]
    json: bool,
    /// Keep each attempt's folder, to look at afterwards.
    #[arg(long)]
    keep: bool,
}

pub(crate) async fn eval(paths: &Paths, args: EvalArgs) -> Result<ExitCode> {
    if !args.solution {
        bail!(
            "clix eval runs with --solution for now (each task's reference solution through each tool design); \
             driving a model through the designs is not built yet"
        );
    }
    let filter =
        args.filter.as_deref().map(regex::Regex::new).transpose().context("--filter is not a regular expression")?;
    let mut tasks = load_suites(&args.suites)?;
    if let Some(filter) = &filter {
        tasks.retain(|t| filter.is_match(&t.id));
    }
    if tasks.is_empty() {
        bail!("no task to run: the suites are empty or --filter matched no task id");
    }
    let settings = settings::load(paths, &[])?.value;
    let mut run = SolutionRun::default();
    if !args.tools.is_empty() {
        run.designs =
            args.tools.iter().map(|d| d.parse::<Design>()).collect::<Result<_, _>>().map_err(anyhow::Error::msg)?;
    }
    run.options.sandbox = settings.sandbox;
    run.options.limits = settings.limits;
    run.options.present = settings.present;
    run.options.keep = args.keep;
    let results = run_solutions(&tasks, &args.suites, &run).await;
    if let Some(dir) = &args.out {
        let path = results.write(dir).with_context(|| format!("cannot write results into {}", dir.display()))?;
        eprintln!("wrote {}", path.display());
    }
    if args.json {
        outln(serde_json::to_string_pretty(&results)?)?;
    } else {
        outln(results.markdown())?;
        outln(results.comparison_markdown())?;
        outln(results.per_task_markdown())?;
        for (design, bytes) in &results.definition_bytes {
            outln(format!("tool definitions of {design}: {bytes} bytes"))?;
        }
        for skip in &results.skipped {
            let design = skip.design.map_or("every design".to_string(), |d| d.to_string());
            outln(format!("skipped {} in {design}: {}", skip.task, skip.reason))?;
        }
    }
    let problems = problems(&results);
    for problem in &problems {
        eprintln!("PROBLEM {problem}");
    }
    Ok(if problems.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
