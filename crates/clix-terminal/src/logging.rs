//! The one log subscriber, which the binary installs: the library crates
//! emit `tracing` events, and this decides where they go, which is always stderr (stdout
//! carries results, and MCP itself under `clix mcp`).
//!
//! Which events show: `--log-level LEVEL` (clix's own crates at LEVEL,
//! dependencies at `warn`), else `CLIX_LOG` (env-filter syntax, e.g.
//! `clix_sandbox=debug`, anything not named at `warn`), else `warn`.

use clap::ValueEnum;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::LevelFilter;

/// The variable that holds an env-filter for the whole process.
pub const ENV_VAR: &str = "CLIX_LOG";

/// `--log-level`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogLevel {
    /// Errors only.
    Error,
    /// Warnings and errors (the default).
    Warn,
    /// What clix does, step by step.
    Info,
    /// And why.
    Debug,
    /// Everything clix's crates say.
    Trace,
}

impl LogLevel {
    fn as_str(self) -> &'static str {
        match self {
            LogLevel::Error => "error",
            LogLevel::Warn => "warn",
            LogLevel::Info => "info",
            LogLevel::Debug => "debug",
            LogLevel::Trace => "trace",
        }
    }
}

/// The env-filter directives in force, and a problem with `CLIX_LOG` to
/// report once the subscriber exists.
///
/// A level finer than `warn` opens clix's crates only (every target that
/// starts with `clix`): a dependency's trace (HTTP frames, TLS) is for a
/// person who names it in `CLIX_LOG`.
pub fn directives(level: Option<LogLevel>, clix_log: Option<&str>) -> (String, Option<String>) {
    if let Some(level) = level {
        return match level {
            LogLevel::Error | LogLevel::Warn => (level.as_str().to_string(), None),
            finer => (format!("warn,clix={}", finer.as_str()), None),
        };
    }
    match clix_log.map(str::trim).filter(|s| !s.is_empty()) {
        Some(given) => match EnvFilter::builder().parse(given) {
            Ok(_) => (given.to_string(), None),
            Err(e) => {
                ("warn".to_string(), Some(format!("{ENV_VAR}={given:?} is not a valid filter ({e}); using warn")))
            }
        },
        None => ("warn".to_string(), None),
    }
}

/// Installs the stderr subscriber for the whole process (every thread and
/// runtime). Called once, after the arguments are parsed.
pub fn init(level: Option<LogLevel>) {
    let clix_log = std::env::var(ENV_VAR).ok();
    let (directives, problem) = directives(level, clix_log.as_deref());
    let filter = EnvFilter::builder().with_default_directive(LevelFilter::WARN.into()).parse_lossy(&directives);
    let installed = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).try_init();
    if installed.is_ok()
        && let Some(problem) = problem
    {
        tracing::warn!("{problem}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_wins_and_opens_only_clix_crates() {
        let cases = [
            (Some(LogLevel::Debug), Some("clix_sandbox=trace"), "warn,clix=debug"),
            (Some(LogLevel::Trace), None, "warn,clix=trace"),
            (Some(LogLevel::Info), None, "warn,clix=info"),
            (Some(LogLevel::Warn), None, "warn"),
            (Some(LogLevel::Error), Some("debug"), "error"),
            (None, Some("clix_sandbox=debug"), "clix_sandbox=debug"),
            (None, Some("  "), "warn"),
            (None, None, "warn"),
        ];
        for (level, env, want) in cases {
            assert_eq!(directives(level, env), (want.to_string(), None), "{level:?} {env:?}");
        }
    }

    #[test]
    fn a_bad_clix_log_falls_back_to_warn_and_says_so() {
        let (directives, problem) = directives(None, Some("clix_sandbox=loud"));
        assert_eq!(directives, "warn");
        assert!(problem.is_some_and(|p| p.contains("CLIX_LOG") && p.contains("using warn")));
    }
}
