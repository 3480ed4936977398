//! `clix doctor`: whether this machine can run what the configuration
//! asks for, and the cleanup of what a crashed machine left behind. A
//! start never does that work: a killed clix's warden ends its children
//! and removes its cgroups; only a warden killed too (the machine went
//! down mid-run, the OOM killer) leaves any, and this removes them.

use anyhow::{Result, bail};
use clix_engine::{Availability, SandboxMode};

use crate::settings::Settings;

/// One line per check; an error when the configured sandbox cannot run.
pub fn doctor(settings: &Settings, out: &mut dyn FnMut(String)) -> Result<()> {
    let sandbox = match settings.sandbox.mode {
        SandboxMode::Bwrap => match clix_engine::probe() {
            Availability::Ready { bwrap } => {
                out(format!("sandbox: ready (bubblewrap at {})", bwrap.display()));
                None
            }
            Availability::Unavailable(why) => {
                out("sandbox: UNAVAILABLE".to_string());
                Some(why)
            }
        },
        SandboxMode::Host => {
            out("sandbox: mode = host: programs run unsandboxed".to_string());
            None
        }
        SandboxMode::Off => {
            out("sandbox: mode = off: no OS tier, only clix's own commands run".to_string());
            None
        }
    };
    let removed = clix_engine::remove_leftover_cgroups();
    match removed.as_slice() {
        [] => out("leftovers: none".to_string()),
        dirs => {
            out(format!("leftovers: removed {} cgroup(s) of clix processes that are gone:", dirs.len()));
            for dir in dirs {
                out(format!("  {}", dir.display()));
            }
        }
    }
    match sandbox {
        Some(why) => bail!("the sandbox cannot run here: {why}"),
        None => Ok(()),
    }
}
