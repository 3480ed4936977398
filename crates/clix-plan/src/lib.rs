//! Plans of agents: a DAG of tasks, each run by its own agent in its own
//! namespace of one shared workspace.
//!
//! This crate owns:
//!
//! - the plan file (`[[task]]`: `id`, `prompt`, `depends_on`, `inputs`,
//!   `writes`, `model`, `provider`, `max_steps`, `timeout_secs`, `retries`,
//!   `domain`), read whole and checked before anything runs, every problem at
//!   once: unknown fields (with the near name), unknown and duplicate ids,
//!   cycles (named along their path), inputs that are not dependencies, two
//!   tasks that may run at once writing one place, `writes` outside the
//!   workspace or into the runtime's `agents/` and `shared/`;
//! - the scheduler: a task starts as soon as its dependencies are done, up to
//!   `jobs` at once, with no barrier between levels; retries with a doubling
//!   backoff; a failed task's dependents skipped; `--on-failure stop` stops the
//!   running agents and starts nothing more;
//! - the namespaces: `agents/<id>/` and `shared/` made here through the
//!   workspace handle, then enforced by the handle and the sandbox's mounts
//!   through `clix_engine::Engine::confined`, so an agent writes only in its
//!   own folder and its `writes`;
//! - checkpoints for `--resume`: a file under the state folder per plan file,
//!   or with `[storage] url` the same JSON as a `plan-checkpoint` document of
//!   the shared store, so another machine with the plan at the same path
//!   resumes it; a finished task is kept while its `[[task]]` and those it
//!   depends on are unchanged, and what runs again is said;
//! - `plan-result.json`, and the plan's own stream lines (`plan_start`,
//!   `task_start`, `task_end`, `plan_end`) beside each agent's;
//! - the plan files a person names (`read_named`, `write_named`: through the
//!   workspace handle when they lie in it);
//! - the coordinator's one tool, `propose_plan`, which checks each proposal as
//!   `clix plan check` does.
//!
//! It must not build engines or providers itself: its [`AgentRunner`] does
//! (`clix_session::PlanRunner` for clix, a scripted one in tests and the
//! benchmark). It must not print (its caller renders the stream lines it
//! emits), nor let an agent start a plan (a coordinator only proposes one).

/// The variable set (to `1`) for every program a plan's agent runs: the
/// depth limit, since `clix plan run|make` refuses to start under it (the
/// coordinator plans; agents do their own task).
pub const AGENT_VAR: &str = "CLIX_PLAN_AGENT";

mod checkpoint;
mod files;
mod plan;
mod propose;
mod run;

pub use checkpoint::{Checkpoint, DOCUMENT_KIND, checkpoint_key, checkpoint_path};
pub use files::{PlanFileError, read_named, write_named};
pub use plan::{Plan, PlanError, RESERVED, Task};
pub use propose::ProposePlan;
pub use run::{
    AgentRunner, Job, LocalFuture, OnFailure, PlanResult, RunOptions, StatusKind, TaskEnd, TaskReport, TaskStatus,
    run_plan, save_result,
};
