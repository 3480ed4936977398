//! Where the tests find the MiniLM model2vec folder that .ci/run builds.
//! Shared by clix-memory's tests and the clix binary's (through `#[path]`).

use std::path::PathBuf;

/// [`clix_testkit::model2vec_dir`]; a missing folder fails the test with
/// the command that builds it.
pub(crate) fn model_dir() -> PathBuf {
    clix_testkit::model2vec_dir().unwrap_or_else(|e| panic!("{e}"))
}
