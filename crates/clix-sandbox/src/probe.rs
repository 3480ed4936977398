//! Is bubblewrap here and able to create namespaces? Asked once per process.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// Whether the sandbox can run, and why not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Availability {
    /// bubblewrap ran a program with every namespace.
    Ready {
        /// Where bwrap is.
        bwrap: PathBuf,
    },
    /// Why not, and what to install or allow.
    Unavailable(String),
}

static PROBE: OnceLock<Availability> = OnceLock::new();
static BWRAP: OnceLock<Option<PathBuf>> = OnceLock::new();

/// The cached result of trying `bwrap … true` with every namespace.
pub fn probe() -> Availability {
    PROBE.get_or_init(run_probe).clone()
}

/// Where bwrap is, looked up once per process.
pub(crate) fn bwrap_path() -> Option<PathBuf> {
    BWRAP.get_or_init(find_bwrap).clone()
}

fn run_probe() -> Availability {
    let Some(bwrap) = bwrap_path() else {
        return Availability::Unavailable("bubblewrap (bwrap) is not installed".into());
    };
    let trial = Command::new(&bwrap)
        .args(["--ro-bind", "/", "/", "--unshare-all", "--uid", "1000", "--gid", "1000"])
        .args(["--die-with-parent", "--new-session", "true"])
        .env_clear()
        .stdin(Stdio::null())
        .output();
    match trial {
        Ok(out) if out.status.success() => Availability::Ready { bwrap },
        Ok(out) => Availability::Unavailable(format!(
            "bwrap cannot create namespaces here: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => Availability::Unavailable(format!("bwrap failed to start: {e}")),
    }
}

/// `bwrap --version`, for `sandbox status`.
pub(crate) fn bwrap_version(bwrap: &std::path::Path) -> String {
    Command::new(bwrap)
        .arg("--version")
        .env_clear()
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

/// `CLIX_BWRAP` (tests point it at a missing path), else `bwrap` on PATH.
fn find_bwrap() -> Option<PathBuf> {
    if let Some(explicit) = std::env::var_os("CLIX_BWRAP") {
        let path = PathBuf::from(explicit);
        return is_executable(&path).then_some(path);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join("bwrap")).find(|p| is_executable(p))
}

pub(crate) fn is_executable(path: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false)
}
