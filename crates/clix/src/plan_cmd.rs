//! `clix plan check|run|make`: plans of agents, for people. clix-plan
//! checks and schedules; this file builds each task's engine and agent
//! (the [`AgentRunner`]), and renders the plan's progress.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Result, bail};
use clix_agent::stream::StreamEvent;
use clix_config::Paths;
use clix_plan::{OnFailure, Plan, RunOptions};
use clix_session::{PlanRunner, Session, Settings};

use clix_terminal::outln;
use clix_terminal::plan_view::{LiveView, summary_table};

#[derive(clap::Args)]
pub(crate) struct PlanArgs {
    #[command(subcommand)]
    action: PlanAction,
}

#[derive(clap::Subcommand)]
enum PlanAction {
    /// Check a plan and print its tasks in the order they can run.
    Check {
        /// The plan file (TOML, `[[task]]` entries).
        plan: PathBuf,
        /// A Graphviz digraph instead (`| dot -Tsvg`).
        #[arg(long)]
        dot: bool,
    },
    /// Run a plan's tasks, each by its own agent in agents/<id>/.
    Run(RunPlanArgs),
    /// Have a coordinator model write a plan for a goal (it gets no `run` tool).
    Make {
        /// What the plan should achieve.
        goal: String,
        /// Where to write the plan.
        #[arg(short, long, default_value = "PLAN.toml", value_name = "FILE")]
        output: PathBuf,
        #[command(flatten)]
        model: ModelFlags,
    },
}

#[derive(clap::Args)]
struct RunPlanArgs {
    /// The plan file; with --goal, where the coordinator's plan is written.
    #[arg(required_unless_present = "goal")]
    plan: Option<PathBuf>,
    /// Write the plan with a coordinator model first, then run it.
    #[arg(long, value_name = "GOAL")]
    goal: Option<String>,
    /// Agents at a time.
    #[arg(short = 'j', long, default_value_t = 4, value_name = "N", value_parser = crate::cli::at_least_one())]
    jobs: usize,
    /// After a task fails for good: finish independent branches, or stop everything.
    #[arg(long, value_enum, default_value = "continue")]
    on_failure: FailureFlag,
    /// Skip the tasks a previous run of this plan finished (on this machine; with [storage] url, on any
    /// machine that has the plan at the same path).
    #[arg(long)]
    resume: bool,
    /// Every agent's events and the plan's, one JSON object per line.
    #[arg(long)]
    jsonl: bool,
    /// The first retry's wait, in milliseconds; each next one doubles.
    #[arg(long, default_value_t = 2000, value_name = "MS")]
    retry_backoff_ms: u64,
    #[command(flatten)]
    model: ModelFlags,
}

#[derive(clap::Args, Clone)]
struct ModelFlags {
    /// The folder the agents work in (default: the current folder).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Model name, for tasks that do not name one.
    #[arg(long)]
    model: Option<String>,
    /// "openai" or "anthropic", for tasks that do not name one.
    #[arg(long)]
    provider: Option<String>,
}

#[derive(clap::ValueEnum, Clone, Copy)]
enum FailureFlag {
    Continue,
    Stop,
}

pub(crate) async fn plan(paths: &Paths, args: PlanArgs) -> Result<ExitCode> {
    match args.action {
        PlanAction::Check { plan, dot } => check(&plan, dot),
        PlanAction::Make { goal, output, model } => {
            refuse_inside_a_plan()?;
            make(paths, &goal, &output, &model).await.map(|_| ExitCode::SUCCESS)
        }
        PlanAction::Run(run) => {
            refuse_inside_a_plan()?;
            run_cmd(paths, run).await
        }
    }
}

/// The depth limit: a plan's agents run their programs with
/// [`clix_plan::AGENT_VAR`] set, and may not start plans of their own.
fn refuse_inside_a_plan() -> Result<()> {
    if std::env::var_os(clix_plan::AGENT_VAR).is_some() {
        bail!("agents inside a plan cannot start plans; the coordinator plans, agents do their own task");
    }
    Ok(())
}

/// The plan at `path`; `Err` is the exit code after its problems were
/// printed (an invalid plan is 1, not a usage error).
fn read_plan(workspace: &Path, path: &Path) -> Result<Plan, ExitCode> {
    let read = clix_plan::read_named(workspace, path)
        .map_err(|e| format!("cannot read the plan {}: {e}", path.display()))
        .and_then(|text| Plan::parse(&text, &path.display().to_string()).map_err(|e| e.to_string()));
    read.map_err(|e| {
        eprintln!("{e}");
        ExitCode::FAILURE
    })
}

fn check(path: &Path, dot: bool) -> Result<ExitCode> {
    let workspace = crate::cli::workspace_or_cwd(None)?;
    let plan = match read_plan(&workspace, path) {
        Ok(read) => read,
        Err(code) => return Ok(code),
    };
    if dot {
        outln(plan.dot())?;
    } else {
        outln(format_args!("{}: {} tasks in {} layers", path.display(), plan.tasks.len(), plan.layers().len()))?;
        outln(plan.render().trim_end())?;
    }
    Ok(ExitCode::SUCCESS)
}

fn load_settings(paths: &Paths, flags: &ModelFlags) -> Result<(Settings, PathBuf)> {
    let settings = clix_session::load(paths, &[])?.value;
    let workspace = crate::cli::workspace_or_cwd(flags.workspace.clone())?;
    Ok((settings, workspace))
}

/// `clix plan make`: the coordinator proposes until its plan checks out.
async fn make(paths: &Paths, goal: &str, output: &Path, flags: &ModelFlags) -> Result<PathBuf> {
    let (settings, workspace) = load_settings(paths, flags)?;
    let session = Session::for_person(paths.clone(), settings, workspace);
    let provider = session.provider(flags.model.as_deref(), flags.provider.as_deref())?;
    let answer = clix_session::make_plan(&session, provider, goal, output).await?;
    eprintln!("clix: wrote {} ({answer})", output.display());
    Ok(output.to_path_buf())
}

async fn run_cmd(paths: &Paths, args: RunPlanArgs) -> Result<ExitCode> {
    let plan_path = match (&args.goal, &args.plan) {
        (Some(goal), plan) => {
            let output = plan.clone().unwrap_or_else(|| PathBuf::from("PLAN.toml"));
            make(paths, goal, &output, &args.model).await?
        }
        (None, Some(plan)) => plan.clone(),
        (None, None) => bail!("name a plan file, or --goal"),
    };
    let (settings, workspace) = load_settings(paths, &args.model)?;
    let plan = match read_plan(&workspace, &plan_path) {
        Ok(read) => read,
        Err(code) => return Ok(code),
    };
    let absolute = std::fs::canonicalize(&plan_path).unwrap_or(plan_path.clone());
    let mut checkpoint = Session::for_person(paths.clone(), settings.clone(), workspace.clone()).plan_checkpoint(
        &absolute,
        &plan,
        args.resume,
    )?;
    if let Some(note) = &checkpoint.note {
        eprintln!("clix: {}: {note}", plan_path.display());
    }
    let plan_id = format!("plan-{}", clix_agent::trajectory::process_stamp());
    let options = RunOptions {
        jobs: args.jobs,
        on_failure: match args.on_failure {
            FailureFlag::Continue => OnFailure::Continue,
            FailureFlag::Stop => OnFailure::Stop,
        },
        retry_backoff: Duration::from_millis(args.retry_backoff_ms),
        plan_id,
    };
    // No one answers the agents' questions: a machine runs the plan.
    let runner = PlanRunner {
        paths: paths.clone(),
        settings,
        workspace: workspace.clone(),
        model: args.model.model.clone(),
        provider: args.model.provider.clone(),
    };
    let (stop_tx, stop) = tokio::sync::watch::channel(false);
    clix_terminal::input::on_ctrl_c("stopping the plan's agents", move || {
        let _ = stop_tx.send(true);
    });
    let view = RefCell::new(LiveView::new(args.jsonl, &plan));
    let emit = |line: StreamEvent| view.borrow_mut().line(line);
    let name = plan_path.display().to_string();
    let result =
        clix_plan::run_plan(&plan, &name, &workspace, &runner, &options, &mut checkpoint, stop.clone(), &emit).await?;
    view.borrow_mut().finish();
    if let Some(why) = &checkpoint.save_error {
        eprintln!("clix: {why}");
    }
    let saved = clix_plan::save_result(&workspace, &result)?;
    if !args.jsonl {
        outln(summary_table(&result).trim_end())?;
        outln(format_args!("result: {}", saved.display()))?;
    }
    Ok(if *stop.borrow() {
        crate::cli::exit_code(clix_common::exit::CANCELLED)
    } else if result.succeeded() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
