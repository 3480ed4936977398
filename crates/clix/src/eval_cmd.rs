//! `clix eval`: the eval harness (clix-eval) for people and CI.
//!
//! - `clix eval SUITE…`: a model through each tool design (`run`, `bash`,
//!   `typed`), each attempt in its own workspace; a progress bar, the
//!   Markdown tables, `results.json`, `report.html` and a replay page per
//!   attempt in the output folder.
//! - `clix eval SUITE… --solution`: each task's reference solution through
//!   each design instead of a model; its checks must pass and doing nothing
//!   must fail.
//! - `clix eval compare A B`: two runs' `results.json` side by side, with
//!   the tasks that flipped.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clix_agent::read_run;
use clix_agent::trajectory::{now_ms, timestamp_id};
use clix_config::Paths;
use clix_eval::{
    AttemptOptions, AttemptRecord, Design, ModelRun, Results, SolutionRun, Task, comparison, load_suites, problems,
    run_model, run_solutions,
};

use crate::cli::outln;
use clix_session::Settings;

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub(crate) struct EvalArgs {
    #[command(subcommand)]
    compare: Option<EvalCommand>,
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
    /// Model name (beats AGENT_MODEL and the config file).
    #[arg(long, conflicts_with = "solution")]
    model: Option<String>,
    /// "openai" (any OpenAI-compatible API) or "anthropic".
    #[arg(long, conflicts_with = "solution")]
    provider: Option<String>,
    /// Attempts of each task in each design (pass@k and pass^k need more than one).
    #[arg(long, value_name = "N", default_value_t = 1, conflicts_with = "solution",
          value_parser = clap::value_parser!(u32).range(1..))]
    repeat: u32,
    /// Attempts run at once.
    #[arg(short = 'j', long = "jobs", value_name = "N", default_value_t = 1, conflicts_with = "solution",
          value_parser = crate::cli::at_least_one())]
    jobs: usize,
    /// Model turns of an attempt when its task names none (default 10, as bashkit-eval).
    #[arg(long, value_name = "N", conflicts_with = "solution", value_parser = clap::value_parser!(u32).range(1..))]
    max_steps: Option<u32>,
    /// Write results.json (and, with a model, report.html and the runs) into this folder.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Print the results as JSON (results.json's schema) instead of tables.
    #[arg(long)]
    json: bool,
    /// Keep each attempt's folder, to look at afterwards.
    #[arg(long)]
    keep: bool,
}

#[derive(clap::Subcommand)]
enum EvalCommand {
    /// Two runs side by side, with the tasks that flipped: clix eval compare A/results.json B/results.json
    Compare {
        /// The first run's results.json (or its folder).
        before: PathBuf,
        /// The second run's results.json (or its folder).
        after: PathBuf,
    },
}

pub(crate) async fn eval(paths: &Paths, args: EvalArgs) -> Result<ExitCode> {
    if let Some(EvalCommand::Compare { before, after }) = &args.compare {
        return compare(before, after);
    }
    let tasks = tasks(&args)?;
    let settings = clix_session::load(paths, &[])?.value;
    let designs = if args.tools.is_empty() {
        Design::ALL.to_vec()
    } else {
        args.tools.iter().map(|d| d.parse::<Design>()).collect::<Result<_, _>>().map_err(anyhow::Error::msg)?
    };
    let mut options = AttemptOptions {
        sandbox: settings.sandbox.clone(),
        limits: settings.limits.clone(),
        ..AttemptOptions::default()
    };
    options.present = settings.present.clone();
    options.keep = args.keep;
    if args.solution {
        solution(&args, &tasks, SolutionRun { designs, options, do_nothing: true }).await
    } else {
        model(paths, &args, &tasks, &settings, designs, options).await
    }
}

/// The suites' tasks that `--filter` keeps; an error when none is left.
fn tasks(args: &EvalArgs) -> Result<Vec<Task>> {
    let filter =
        args.filter.as_deref().map(regex::Regex::new).transpose().context("--filter is not a regular expression")?;
    let mut tasks = load_suites(&args.suites)?;
    if let Some(filter) = &filter {
        tasks.retain(|t| filter.is_match(&t.id));
    }
    if tasks.is_empty() {
        bail!("no task to run: the suites are empty or --filter matched no task id");
    }
    Ok(tasks)
}

async fn solution(args: &EvalArgs, tasks: &[Task], run: SolutionRun) -> Result<ExitCode> {
    let results = run_solutions(tasks, &args.suites, &run).await;
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
        print_skipped(&results)?;
    }
    let problems = problems(&results);
    for problem in &problems {
        eprintln!("PROBLEM {problem}");
    }
    Ok(if problems.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

async fn model(
    paths: &Paths,
    args: &EvalArgs,
    tasks: &[Task],
    settings: &Settings,
    designs: Vec<Design>,
    mut options: AttemptOptions,
) -> Result<ExitCode> {
    // The person's provider; each attempt's engine is an isolated session of its own.
    let provider = settings.person_provider(args.model.as_deref(), args.provider.as_deref())?;
    if let Some(n) = args.max_steps {
        options.max_steps = n;
    }
    let out = args.out.clone().unwrap_or_else(|| paths.data_dir.join("evals").join(timestamp_id(now_ms() / 1000)));
    let run = ModelRun {
        designs,
        options,
        provider,
        agent: settings.agent.clone(),
        repeat: args.repeat,
        jobs: args.jobs,
        runs_dir: out.join("runs"),
    };
    let mut progress = Progress::new(run.attempts(tasks) as u64, !args.json && std::io::stderr().is_terminal());
    let results = run_model(tasks, &args.suites, &run, &mut |r| progress.done(r)).await;
    progress.finish();
    let json = results.write(&out).with_context(|| format!("cannot write results into {}", out.display()))?;
    write_replays(&results, &run.runs_dir);
    let page = out.join("report.html");
    let html = clix_eval::html(&results, &|r| replay_page(r).map(|p| format!("runs/{p}")));
    std::fs::write(&page, html).with_context(|| format!("cannot write {}", page.display()))?;
    if args.json {
        outln(serde_json::to_string_pretty(&results)?)?;
    } else {
        outln(format!("model: {}", results.model.as_deref().unwrap_or_default()))?;
        outln(results.markdown())?;
        print_skipped(&results)?;
    }
    eprintln!("wrote {} and {}", json.display(), page.display());
    let errors: Vec<&AttemptRecord> = results.attempts.iter().filter(|r| r.stop_reason.error().is_some()).collect();
    if let Some(first) = errors.first() {
        eprintln!(
            "clix: {} of {} attempts could not run; the first ({} in {}): {}",
            errors.len(),
            results.attempts.len(),
            first.task,
            first.design,
            first.stop_reason.error().unwrap_or_default()
        );
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

fn print_skipped(results: &Results) -> Result<()> {
    for skip in &results.skipped {
        let design = skip.design.map_or("every design".to_string(), |d| d.to_string());
        outln(format!("skipped {} in {design}: {}", skip.task, skip.reason))?;
    }
    Ok(())
}

/// The replay page of an attempt, named after its trajectory.
fn replay_page(r: &AttemptRecord) -> Option<String> {
    let stem = r.trajectory.as_deref()?.file_stem()?.to_str()?;
    Some(format!("{stem}.html"))
}

/// A replay page beside each trajectory; one that cannot be written is
/// said, and the report still links to it.
fn write_replays(results: &Results, runs_dir: &Path) {
    for r in &results.attempts {
        let (Some(page), Some(id)) = (replay_page(r), r.trajectory.as_deref().and_then(Path::file_stem)) else {
            continue;
        };
        let id = id.to_string_lossy();
        let written = read_run(runs_dir, &id)
            .and_then(|records| std::fs::write(runs_dir.join(&page), crate::replay_html::render(&id, &records)));
        if let Err(e) = written {
            eprintln!("clix: cannot write the replay of {id}: {e}");
        }
    }
}

/// The bar on a terminal: attempts done, passing so far, tokens so far.
struct Progress {
    bar: Option<indicatif::ProgressBar>,
    passed: u64,
    done: u64,
    tokens: u64,
}

impl Progress {
    fn new(total: u64, show: bool) -> Self {
        let bar = show.then(|| {
            let bar = indicatif::ProgressBar::new(total);
            let style = indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} attempts · {msg} · {elapsed}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
            bar.set_style(style);
            bar.enable_steady_tick(std::time::Duration::from_millis(500));
            bar
        });
        Progress { bar, passed: 0, done: 0, tokens: 0 }
    }

    fn done(&mut self, r: &AttemptRecord) {
        self.done += 1;
        self.passed += u64::from(r.passed);
        self.tokens += r.input_tokens.unwrap_or(0) + r.output_tokens.unwrap_or(0);
        match &self.bar {
            Some(bar) => {
                bar.set_message(format!("{}/{} passing · {} tokens", self.passed, self.done, self.tokens));
                bar.inc(1);
            }
            // Without a terminal (CI logs), one line per attempt.
            None => eprintln!(
                "{} {} [{}] r{}: {} in {:.1}s",
                if r.passed { "PASS" } else { "FAIL" },
                r.task,
                r.design,
                r.repeat,
                r.stop_reason,
                r.wall_ms as f64 / 1000.0
            ),
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// `clix eval compare A B`.
fn compare(before: &Path, after: &Path) -> Result<ExitCode> {
    let read = |p: &Path| {
        let file = if p.is_dir() { p.join("results.json") } else { p.to_path_buf() };
        Results::read(&file).map_err(anyhow::Error::msg)
    };
    let (a, b) = (read(before)?, read(after)?);
    for (label, r, p) in [("A", &a, before), ("B", &b, after)] {
        outln(format!("{label}: {} ({})", p.display(), r.model.as_deref().unwrap_or("reference solutions")))?;
    }
    outln(format!("\n{}", comparison(&a, &b, ("A", "B"))))?;
    Ok(ExitCode::SUCCESS)
}
