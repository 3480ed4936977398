//! A local model2vec folder (static embeddings), fully offline.

use std::path::Path;

use model2vec_rs::model::StaticModel;

use super::{EmbedError, Embedder};

/// Static embeddings from a local model2vec folder: no network, no GPU.
pub struct Model2Vec {
    model: StaticModel,
    id: String,
}

impl Model2Vec {
    /// Loads the model folder (`model.safetensors`, `tokenizer.json`, `config.json`).
    pub fn load(path: &Path) -> Result<Self, EmbedError> {
        let shown = path.display().to_string();
        if !path.join("model.safetensors").is_file() {
            return Err(EmbedError::Load { path: shown, message: "no model.safetensors in it".into() });
        }
        let model = StaticModel::from_pretrained(path, None, None, None)
            .map_err(|e| EmbedError::Load { path: shown.clone(), message: format!("{e:#}") })?;
        let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        Ok(Model2Vec { model, id: format!("model2vec:{}", canonical.display()) })
    }

    /// The number of dimensions of its vectors.
    pub fn dim(&self) -> usize {
        self.model.dim()
    }
}

impl Embedder for Model2Vec {
    fn id(&self) -> String {
        self.id.clone()
    }

    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(self.model.encode(texts))
    }
}
