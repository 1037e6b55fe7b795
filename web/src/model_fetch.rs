//! Asks a provider for its model list (`GET {base}/models`), for the model picker. The request
//! (its URL and the protocol's headers) is ccm-provider's and `fetch` is ccm-browser's: the app
//! only reads the answer.

use crate::models::{parse_model_list, ListedModel};
use crate::provider::ProviderSettings;
use ccm_browser::transport;

/// The provider's models, sorted by name.
///
/// # Errors
/// A sentence for the person: no list for the offline model, a bad URL, a network failure,
/// an HTTP error, or an answer that is not a model list.
pub async fn fetch_models(
    settings: &ProviderSettings,
    key: &str,
) -> Result<Vec<ListedModel>, String> {
    let config = settings
        .provider_config(Some(key))?
        .ok_or("the offline demo model has no model list")?;
    let body = transport::fetch_model_list(&config).await?;
    parse_model_list(&body)
}
