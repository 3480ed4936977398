//! What the eval harness's integration tests share.

use clix_sandbox::Availability;

/// Whether bubblewrap works here; otherwise the test says it was skipped
/// (and fails under CI, which installs it).
pub(crate) fn sandbox_ready(test: &str) -> bool {
    match clix_sandbox::probe() {
        Availability::Ready { .. } => true,
        Availability::Unavailable(why) => {
            clix_testkit::skip_missing(test, &format!("the sandbox is unavailable: {why}"));
            false
        }
    }
}
