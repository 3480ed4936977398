//! What the test suites of several clix crates share, written once: how a
//! test says it was skipped, the canary folder of the attack tests and
//! their symlink-swapping race, the real small model the end-to-end
//! tests serve (`llm`), which processes are still alive and a finished
//! one's peak memory (`procs`), a private sshd for the `clip` tests
//! (`sshd`), a private PostgreSQL with pgvector, one per test binary with a
//! database per test (`postgres`), nginx as the load balancer of the
//! replica tests (`nginx`), the scale suite's table and generated
//! workspace (`scale`), and the scripted model server of the agent's, the
//! binary's and the eval's tests (`model_server`: real HTTP, OpenAI and
//! Anthropic replies in turn).
//!
//! It is a dev-dependency only (and a dependency of the benchmark, which is
//! not shipped and reaches the same sshd). It must not hold assertions about clix's
//! behaviour (those belong to each crate's own tests), only the harness
//! around them.

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
