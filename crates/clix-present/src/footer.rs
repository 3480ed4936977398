//! The `[exit:N | 12ms]` footer every result ends with, and the failed
//! pipeline stages it names between the two (`[exit:0 | jq exit 5 | 4ms]`).

use std::time::Duration;

use clix_common::exit;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One stage of a pipeline the line ran, and how it ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StageExit {
    /// The stage's command as written (`jq`), or a compound's form (`(…)`,
    /// `{…}`, `for`, `while`).
    pub command: String,
    /// Its exit code, as bash's `PIPESTATUS` holds it (128+N for signal N).
    pub exit_code: i32,
}

/// Failed stages named in the footer; past them, `…` (the rest are in
/// `--json`'s `failed_stages`).
const NAMED_STAGES: usize = 3;

/// A stage's command is cut past this many characters (a name built from
/// a `$(…)` can be a whole command line).
const COMMAND_CHARS: usize = 32;

/// The stages the footer names, from the line's pipelines (each its
/// stages, first to last, in the order the pipelines ended): every stage
/// other than a pipeline's last that failed, each command and code once,
/// first failure first.
///
/// A pipeline's status is its last stage's, so `jq … | awk …` whose jq
/// failed exits 0; `PIPESTATUS` is bash's answer and the footer is the
/// model's. Every pipeline of the line counts, not only the last (which is
/// all `PIPESTATUS` keeps): the first failure of `a | b; c | d` or of a
/// loop's pipeline is the one that explains what follows, and a later
/// pipeline that succeeded does not undo it. The last stage is never named:
/// its code is the line's, in the footer already (under `pipefail` the line
/// exits with a failed stage's code, which is still named, so the model
/// knows whose code it is).
///
/// Not a failure: 141, a writer whose reader stopped early (`yes | head
/// -1`, `cat big.log | grep -q x`) and that ended by SIGPIPE. That is how a
/// pipe ends when its reader has what it wanted; bash users do not treat it
/// as an error (a `pipefail` script that does is a known trap), and naming
/// it would send the model after a problem that is not there.
pub fn failed_stages(pipelines: &[Vec<StageExit>]) -> Vec<StageExit> {
    let mut failed: Vec<StageExit> = Vec::new();
    for stages in pipelines {
        let Some((_, before_last)) = stages.split_last() else { continue };
        for stage in before_last {
            let counts = stage.exit_code != exit::SUCCESS && stage.exit_code != exit::BROKEN_PIPE;
            if counts && !failed.contains(stage) {
                failed.push(stage.clone());
            }
        }
    }
    failed
}

/// The last line of every presentation: the line's exit code, the failed
/// stages of its pipelines when there are any ([`failed_stages`]), and its
/// duration. `[exit:0 | jq exit 5 | 4ms]`, `[exit:0 | jq exit 5, sort exit 2
/// | 4ms]`, `[exit:0 | python3 killed by SIGKILL | 2.1s]`.
pub fn footer(exit_code: i32, failed: &[StageExit], duration: Duration) -> String {
    let mut text = format!("[exit:{exit_code} | ");
    if !failed.is_empty() {
        let named: Vec<String> = failed.iter().take(NAMED_STAGES).map(stage_text).collect();
        text.push_str(&named.join(", "));
        if failed.len() > NAMED_STAGES {
            text.push_str(", …");
        }
        text.push_str(" | ");
    }
    text.push_str(&clix_common::short_duration(duration));
    text.push(']');
    text
}

/// `jq exit 5`, `python3 killed by SIGKILL`, `slow.sh timed out`.
fn stage_text(stage: &StageExit) -> String {
    let command = match stage.command.chars().count() {
        0 => "a stage".to_string(),
        n if n > COMMAND_CHARS => format!("{}…", stage.command.chars().take(COMMAND_CHARS).collect::<String>()),
        _ => stage.command.clone(),
    };
    match how_it_ended(stage.exit_code) {
        Ended::Code(code) => format!("{command} exit {code}"),
        Ended::Signal(name) => format!("{command} killed by {name}"),
        Ended::TimedOut => format!("{command} timed out"),
    }
}

enum Ended {
    Code(i32),
    Signal(&'static str),
    TimedOut,
}

/// How a stage ended, read the way bash reports it: 128+N is signal N
/// (where N is a signal a program is commonly killed by), 124 the time limit
/// that clix's sandbox and GNU `timeout` give.
fn how_it_ended(code: i32) -> Ended {
    if code == exit::TIMEOUT {
        return Ended::TimedOut;
    }
    let name = match code - exit::SIGNALLED {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        6 => "SIGABRT",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        24 => "SIGXCPU",
        25 => "SIGXFSZ",
        31 => "SIGSYS",
        _ => return Ended::Code(code),
    };
    Ended::Signal(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stage(command: &str, exit_code: i32) -> StageExit {
        StageExit { command: command.into(), exit_code }
    }

    #[test]
    fn table() {
        let cases = [
            (0, 0, "[exit:0 | 0ms]"),
            (0, 12, "[exit:0 | 12ms]"),
            (1, 999, "[exit:1 | 999ms]"),
            (127, 1000, "[exit:127 | 1.0s]"),
            (124, 1249, "[exit:124 | 1.2s]"),
            (2, 61_500, "[exit:2 | 61.5s]"),
        ];
        for (code, ms, want) in cases {
            assert_eq!(footer(code, &[], Duration::from_millis(ms)), want);
        }
    }

    /// A command of 40 characters: cut at 32.
    const LONG: &str = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx";

    /// The line's pipelines, each its stages' command and code.
    type Pipelines = Vec<Vec<(&'static str, i32)>>;

    /// Pipelines and the line's code → the footer.
    #[test]
    fn failed_stages_table() {
        let cases: Vec<(Pipelines, i32, &str)> = vec![
            (vec![], 0, "[exit:0 | 4ms]"),
            (vec![vec![("cat", 0), ("wc", 0)]], 0, "[exit:0 | 4ms]"),
            (vec![vec![("jq", 5), ("awk", 0)]], 0, "[exit:0 | jq exit 5 | 4ms]"),
            // The last stage's code is the line's: never named twice.
            (vec![vec![("cat", 0), ("grep", 1)]], 1, "[exit:1 | 4ms]"),
            (vec![vec![("false", 1), ("false", 1)]], 1, "[exit:1 | false exit 1 | 4ms]"),
            (vec![vec![("jq", 5), ("sort", 2), ("head", 0)]], 0, "[exit:0 | jq exit 5, sort exit 2 | 4ms]"),
            // Under pipefail the line's code is the stage's: still named.
            (vec![vec![("jq", 5), ("awk", 0)]], 5, "[exit:5 | jq exit 5 | 4ms]"),
            // A reader that stopped early is how a pipe ends, not a failure.
            (vec![vec![("yes", 141), ("head", 0)]], 0, "[exit:0 | 4ms]"),
            (vec![vec![("yes", 141), ("jq", 5), ("head", 0)]], 0, "[exit:0 | jq exit 5 | 4ms]"),
            (vec![vec![("python3", 137), ("cat", 0)]], 0, "[exit:0 | python3 killed by SIGKILL | 4ms]"),
            (vec![vec![("sleep", 143), ("cat", 0)]], 0, "[exit:0 | sleep killed by SIGTERM | 4ms]"),
            (vec![vec![("slow.sh", 124), ("cat", 0)]], 0, "[exit:0 | slow.sh timed out | 4ms]"),
            (vec![vec![("odd", 200), ("cat", 0)]], 0, "[exit:0 | odd exit 200 | 4ms]"),
            (vec![vec![("(…)", 3), ("cat", 0)]], 0, "[exit:0 | (…) exit 3 | 4ms]"),
            // Every pipeline of the line, first failure first, each once.
            (vec![vec![("a", 1), ("b", 0)], vec![("c", 2), ("d", 0)]], 0, "[exit:0 | a exit 1, c exit 2 | 4ms]"),
            (vec![vec![("jq", 5), ("awk", 0)], vec![("jq", 5), ("awk", 0)]], 0, "[exit:0 | jq exit 5 | 4ms]"),
            (vec![vec![("a", 1), ("b", 0)], vec![("c", 0), ("d", 0)]], 0, "[exit:0 | a exit 1 | 4ms]"),
            (
                vec![vec![("a", 1), ("b", 2), ("c", 3), ("d", 4), ("e", 0)]],
                0,
                "[exit:0 | a exit 1, b exit 2, c exit 3, … | 4ms]",
            ),
            (vec![vec![("", 1), ("cat", 0)]], 0, "[exit:0 | a stage exit 1 | 4ms]"),
            (vec![vec![(LONG, 1), ("cat", 0)]], 0, "[exit:0 | xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx… exit 1 | 4ms]"),
            // A one-stage "pipeline" has no stage before its last.
            (vec![vec![("false", 1)]], 1, "[exit:1 | 4ms]"),
        ];
        for (pipelines, code, want) in cases {
            let pipelines: Vec<Vec<StageExit>> =
                pipelines.iter().map(|p| p.iter().map(|(c, e)| stage(c, *e)).collect()).collect();
            let failed = failed_stages(&pipelines);
            assert_eq!(footer(code, &failed, Duration::from_millis(4)), want, "{pipelines:?}");
        }
    }
}
