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
//! - With `[storage] url`, every run that writes its results also saves
//!   them in the store every replica shares, under its folder's name:
//!   `clix eval compare` takes such a name on any machine, and `clix eval
//!   runs` lists them.
//! - `clix eval SUITE… --shard i/n` runs one slice of either kind of run,
//!   and `clix eval merge DIR…` joins every slice's results (and, with a
//!   model, their trajectories, replay pages and report) into the whole
//!   run's.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clix_config::Paths;
use clix_eval::{
    AttemptOptions, Design, Mode, ModelRun, Results, Shard, ShardRecord, SharedRuns, SolutionRun, Task, comparison,
    load_suites, run_model, run_solutions,
};

use clix_session::{Session, Settings};
use clix_terminal::outln;
use clix_terminal::progress::Progress;

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
    /// A tool design: run, bash, typed or mcp-direct (repeatable; default: run, bash and typed).
    #[arg(long = "tools", value_name = "DESIGN")]
    tools: Vec<String>,
    /// Only the tasks whose id matches this regular expression.
    #[arg(long, value_name = "RE")]
    filter: Option<String>,
    /// Run slice I of N of the tasks (after --filter), every design and repeat of a task on one slice,
    /// the same slice on every machine, e.g. --shard 2/4; clix eval merge joins the slices' results.
    #[arg(long, value_name = "I/N")]
    shard: Option<Shard>,
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
    /// Write results.json (and, with a model, report.html and the runs) into this folder (a model run's
    /// default: <data>/evals/<start time>). With [storage] url set, the results are also saved in the
    /// shared store under the folder's name (the last part of its path), which clix eval compare takes
    /// on any machine; a run of the same name there is replaced.
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
        /// The first run's results.json or its folder; with [storage] url, also the name it was saved under.
        before: PathBuf,
        /// The second run's results.json or its folder; with [storage] url, also the name it was saved under.
        after: PathBuf,
    },
    /// The names of the runs saved in the shared store ([storage] url): what clix eval compare takes.
    Runs,
    /// Every shard of a run (--shard i/n) joined into the whole run's results: clix eval merge A B C --out DIR
    Merge {
        /// Each shard's output folder (or its results.json).
        #[arg(required = true, value_name = "DIR")]
        shards: Vec<PathBuf>,
        /// Write the merged results.json (and, with a model, report.html and the runs) into this folder.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Print the results as JSON (results.json's schema) instead of tables.
        #[arg(long)]
        json: bool,
    },
}

pub(crate) async fn eval(paths: &Paths, args: EvalArgs) -> Result<ExitCode> {
    match &args.compare {
        Some(EvalCommand::Compare { before, after }) => return compare(paths, before, after),
        Some(EvalCommand::Runs) => return runs(paths),
        Some(EvalCommand::Merge { shards, out, json }) => return merge(paths, shards, out.as_deref(), *json),
        None => {}
    }
    let run_tasks = tasks(&args)?;
    let settings = clix_session::load(paths, &[])?.value;
    let shared = shared_runs(paths, &settings)?;
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
    let slice = args.shard.map(|shard| {
        let slice = shard.slice(&run_tasks, &designs);
        if slice.is_empty() {
            eprintln!(
                "clix: shard {shard} has no task (the run has {}, and all the attempts of a task run on one \
                 shard); its results say so, for the merge",
                run_tasks.len()
            );
        }
        slice
    });
    let planned = Planned { run: &run_tasks, tasks: slice.as_deref().unwrap_or(&run_tasks) };
    if args.solution {
        solution(&args, planned, SolutionRun { designs, options, do_nothing: true }, shared.as_ref()).await
    } else {
        model(paths, &args, planned, &settings, designs, options, shared.as_ref()).await
    }
}

/// The runs of the store every replica shares, when `[storage] url` is
/// set: connected before a run starts, so a store that cannot be used
/// stops it before any attempt.
fn shared_runs(paths: &Paths, settings: &Settings) -> Result<Option<SharedRuns>> {
    let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    Ok(Session::for_person(paths.clone(), settings.clone(), here).shared_store()?.map(SharedRuns::new))
}

/// Saves the results written into `out` in the shared store too, when there is one.
fn share(shared: Option<&SharedRuns>, results: &Results, out: &Path) {
    if let Some(runs) = shared {
        eprintln!("{}", clix_eval::share(runs, results, out));
    }
}

/// The tasks of the whole run (after `--filter`) and those this process
/// runs: all of them, or its shard's.
struct Planned<'t> {
    run: &'t [Task],
    tasks: &'t [Task],
}

impl Planned<'_> {
    /// What `results.json` records of the shard, when this run is one.
    fn shard(&self, args: &EvalArgs, settings: &serde_json::Value) -> Option<ShardRecord> {
        args.shard.map(|shard| ShardRecord::new(shard, self.run, self.tasks, settings))
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

async fn solution(
    args: &EvalArgs,
    planned: Planned<'_>,
    run: SolutionRun,
    shared: Option<&SharedRuns>,
) -> Result<ExitCode> {
    let mut results = run_solutions(planned.tasks, &args.suites, &run).await;
    results.shard = planned.shard(args, &run.shard_settings());
    if let Some(dir) = &args.out {
        let path = results.write(dir).with_context(|| format!("cannot write results into {}", dir.display()))?;
        eprintln!("wrote {}", path.display());
        share(shared, &results, dir);
    }
    show_solutions(&results, args.json)
}

/// A `--solution` run's tables (or JSON) and its problems: exit 1 when
/// there is one.
fn show_solutions(results: &Results, json: bool) -> Result<ExitCode> {
    let (text, problems) = clix_terminal::eval_view::solutions(results);
    if json {
        outln(serde_json::to_string_pretty(results)?)?;
    } else {
        clix_terminal::out(text.as_bytes())?;
    }
    for problem in &problems {
        eprintln!("{problem}");
    }
    Ok(if problems.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

async fn model(
    paths: &Paths,
    args: &EvalArgs,
    planned: Planned<'_>,
    settings: &Settings,
    designs: Vec<Design>,
    mut options: AttemptOptions,
    shared: Option<&SharedRuns>,
) -> Result<ExitCode> {
    // The person's provider; each attempt's engine is an isolated session of its own.
    let provider = settings.person_provider(args.model.as_deref(), args.provider.as_deref())?;
    if let Some(n) = args.max_steps {
        options.max_steps = n;
    }
    let out = args.out.clone().unwrap_or_else(|| clix_eval::default_out(&paths.data_dir));
    let run = ModelRun {
        designs,
        options,
        provider,
        agent: settings.agent.clone(),
        repeat: args.repeat,
        jobs: args.jobs,
        runs_dir: out.join("runs"),
    };
    let tasks = planned.tasks;
    let mut progress = Progress::new(run.attempts(tasks) as u64, !args.json && std::io::stderr().is_terminal());
    let mut results = run_model(tasks, &args.suites, &run, &mut |r| progress.done(r)).await;
    progress.finish();
    results.shard = planned.shard(args, &run.shard_settings());
    write_model_run(&results, &out, &settings.agent.currency)?;
    share(shared, &results, &out);
    show_model_run(&results, args.json)
}

/// A model run's files, said on stderr.
fn write_model_run(results: &Results, out: &Path, currency: &str) -> Result<()> {
    let written = clix_eval::write_model_run(results, out, currency)
        .with_context(|| format!("cannot write the run into {}", out.display()))?;
    for warning in &written.warnings {
        eprintln!("clix: {warning}");
    }
    eprintln!("wrote {} and {}", written.results.display(), written.report.display());
    Ok(())
}

/// A model run's tables (or JSON): exit 1 when an attempt could not run,
/// naming the first.
fn show_model_run(results: &Results, json: bool) -> Result<ExitCode> {
    let (text, failed) = clix_terminal::eval_view::model_run(results);
    if json {
        outln(serde_json::to_string_pretty(results)?)?;
    } else {
        clix_terminal::out(text.as_bytes())?;
    }
    match failed {
        Some(line) => {
            eprintln!("{line}");
            Ok(ExitCode::FAILURE)
        }
        None => Ok(ExitCode::SUCCESS),
    }
}

/// `clix eval merge SHARD… [--out DIR]`: the whole run's results, shown
/// and written as the unsharded run would have shown and written them,
/// with the same exit code.
fn merge(paths: &Paths, given: &[PathBuf], out: Option<&Path>, json: bool) -> Result<ExitCode> {
    let shared = shared_runs(paths, &clix_session::load(paths, &[])?.value)?;
    let out = out.map_or_else(|| clix_eval::default_out(&paths.data_dir), Path::to_path_buf);
    let (results, warnings) = clix_eval::merge_into(given, &out)?;
    for warning in warnings {
        eprintln!("clix: {warning}");
    }
    match results.mode {
        Mode::Solution => {
            let path = results.write(&out).with_context(|| format!("cannot write results into {}", out.display()))?;
            eprintln!("wrote {}", path.display());
            share(shared.as_ref(), &results, &out);
            show_solutions(&results, json)
        }
        Mode::Model => {
            write_model_run(&results, &out, &crate::agent_cmd::currency(paths))?;
            share(shared.as_ref(), &results, &out);
            show_model_run(&results, json)
        }
    }
}

/// `clix eval compare A B`: each given as a folder, a `results.json`, or
/// a name in the shared store, connected once and only when needed.
fn compare(paths: &Paths, before: &Path, after: &Path) -> Result<ExitCode> {
    let mut store: Option<Option<SharedRuns>> = None;
    let mut shared = || -> Result<Option<SharedRuns>, String> {
        if store.is_none() {
            let settings = clix_session::load(paths, &[]).map_err(|e| e.to_string())?.value;
            store = Some(shared_runs(paths, &settings).map_err(|e| format!("{e:#}"))?);
        }
        Ok(store.clone().flatten())
    };
    let (a, a_shown) = clix_eval::find_results(before, &mut shared)?;
    let (b, b_shown) = clix_eval::find_results(after, &mut shared)?;
    for (label, r, shown) in [("A", &a, a_shown), ("B", &b, b_shown)] {
        outln(format!("{label}: {shown} ({})", r.model.as_deref().unwrap_or("reference solutions")))?;
    }
    outln(format!("\n{}", comparison(&a, &b, ("A", "B"))))?;
    Ok(ExitCode::SUCCESS)
}

/// `clix eval runs`: the names of the runs in the shared store.
fn runs(paths: &Paths) -> Result<ExitCode> {
    let Some(runs) = shared_runs(paths, &clix_session::load(paths, &[])?.value)? else {
        bail!(
            "no [storage] url (or CLIX_STORAGE_URL) is set: runs are kept only in their output folders (--out, \
             else {})",
            paths.data_dir.join("evals").display()
        );
    };
    for name in runs.names()? {
        outln(name)?;
    }
    Ok(ExitCode::SUCCESS)
}
