//! Accounts and bearer tokens.
//!
//! An account owns sessions; a token lets a device act for one account. Tokens are created,
//! rotated and revoked with the `ccm-server token` command on the server (there is no sign-up
//! over HTTP), shown once, and stored only as their SHA-256 hash: a copy of the database does
//! not let anyone act for an account. A token is `ccm_<token id>_<secret>`: the id (not
//! secret) names the token in lists and logs, the secret is 32 bytes from the operating
//! system's random source, so a hash lookup is as good as a comparison and leaks nothing.
//!
//! The tables live in the store's schema beside the sessions, with a version table of their
//! own (`server_schema_version`), migrated under the same kind of advisory lock as the store's:
//!
//! | table | key | columns |
//! |---|---|---|
//! | `accounts` | `id` | `name` (unique), `created_at` |
//! | `tokens` | `id` | `account`, `hash` (unique), `label`, `created_at`, `revoked_at` |
//!
//! and an index `sessions_by_account` on the sessions' account part (`split_part(id, '/', 1)`),
//! by which one account's sessions are listed without reading the others'.

use crate::error::ApiError;
use deadpool_postgres::Pool;
use sha2::{Digest, Sha256};

/// The server's own schema version.
pub const SERVER_SCHEMA_VERSION: i32 = 1;

/// The prefix of every token, so that one found in a log or a paste is recognisable.
pub const TOKEN_PREFIX: &str = "ccm_";

const MIGRATIONS: &[(i32, &str)] = &[(
    1,
    "CREATE TABLE {s}.accounts (
        id text PRIMARY KEY,
        name text NOT NULL UNIQUE,
        created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE TABLE {s}.tokens (
        id text PRIMARY KEY,
        account text NOT NULL REFERENCES {s}.accounts (id),
        hash bytea NOT NULL UNIQUE,
        label text NOT NULL DEFAULT '',
        created_at timestamptz NOT NULL DEFAULT now(),
        revoked_at timestamptz
    );
    CREATE INDEX tokens_by_account ON {s}.tokens (account);
    CREATE INDEX sessions_by_account ON {s}.sessions (split_part(id, '/', 1));",
)];

/// The authenticated account of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    /// Its id: the namespace of its sessions in the store.
    pub id: String,
    /// The id of the token the request used (for logs; never the secret).
    pub token_id: String,
}

/// A token as created: the secret is in `token` and nowhere else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatedToken {
    /// The account's id.
    pub account_id: String,
    /// The account's name.
    pub account_name: String,
    /// The token's id.
    pub token_id: String,
    /// The whole token, to give to the device once.
    pub token: String,
}

/// One token as listed (never its secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenInfo {
    /// The token's id.
    pub id: String,
    /// Its account's name.
    pub account: String,
    /// The label it was created with.
    pub label: String,
    /// When it was created.
    pub created: String,
    /// When it was revoked, if it was.
    pub revoked: Option<String>,
}

/// The accounts and tokens of one store schema.
#[derive(Clone)]
pub struct Accounts {
    pool: Pool,
    schema: String,
}

/// Lowercase hexadecimal of `bytes`.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `n` bytes from the operating system's random source, as hexadecimal.
fn random_hex(n: usize) -> Result<String, ApiError> {
    let mut bytes = vec![0u8; n];
    getrandom::getrandom(&mut bytes).map_err(|e| {
        ApiError::internal(format!("the operating system's random source failed ({e})"))
    })?;
    Ok(hex(&bytes))
}

/// The stored hash of a token.
pub fn token_hash(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

/// Account names: what an operator types.
fn check_account_name(name: &str) -> Result<(), ApiError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '@'));
    if ok {
        Ok(())
    } else {
        Err(ApiError::bad_request(format!(
            "the account name '{name}' is not usable: 1 to 64 letters, digits, '-', '_', '.' or '@'"
        )))
    }
}

/// The refusal for a database failure, with its cause: the pool's and the client's errors
/// name only their own layer ("db error"), the server's sentence and SQLSTATE are further
/// down the chain ("the database system is shutting down (57P03)").
fn db_error(context: &str, error: impl std::error::Error) -> ApiError {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        match inner.downcast_ref::<tokio_postgres::error::DbError>() {
            Some(db) => text.push_str(&format!(": {} ({})", db.message(), db.code().code())),
            None => text.push_str(&format!(": {inner}")),
        }
        cause = inner.source();
    }
    ApiError::unavailable(format!("{context}: {text}"))
}

impl Accounts {
    /// The accounts of the store schema `schema` (already created by the store), migrating
    /// the server's tables.
    ///
    /// # Errors
    /// `unavailable` when the database cannot be reached, `internal` when the migration fails
    /// or the schema was migrated by a newer server.
    pub async fn open(pool: Pool, schema: &str) -> Result<Accounts, ApiError> {
        let accounts = Accounts {
            pool,
            schema: format!("\"{schema}\""),
        };
        accounts.migrate().await?;
        Ok(accounts)
    }

    async fn client(&self) -> Result<deadpool_postgres::Object, ApiError> {
        self.pool
            .get()
            .await
            .map_err(|e| db_error("the database cannot be reached", e))
    }

    async fn migrate(&self) -> Result<(), ApiError> {
        let s = &self.schema;
        let mut client = self.client().await?;
        let fail = |e: tokio_postgres::Error| {
            ApiError::internal(format!("the server's tables could not be migrated: {e}"))
        };
        let tx = client.transaction().await.map_err(fail)?;
        tx.execute(
            "SELECT pg_advisory_xact_lock(hashtext($1))",
            &[&format!("ccm-server schema {s}")],
        )
        .await
        .map_err(fail)?;
        tx.batch_execute(&format!(
            "CREATE TABLE IF NOT EXISTS {s}.server_schema_version (
                 version integer PRIMARY KEY,
                 applied_at timestamptz NOT NULL DEFAULT now()
             );"
        ))
        .await
        .map_err(fail)?;
        let current: i32 = tx
            .query_one(
                &format!("SELECT coalesce(max(version), 0) FROM {s}.server_schema_version"),
                &[],
            )
            .await
            .map_err(fail)?
            .get(0);
        if current > SERVER_SCHEMA_VERSION {
            return Err(ApiError::internal(format!(
                "the server's tables were migrated by a newer ccm-server (version {current}, this one knows up to {SERVER_SCHEMA_VERSION}); update it (nothing was changed)"
            )));
        }
        for (version, script) in MIGRATIONS.iter().filter(|(v, _)| *v > current) {
            tx.batch_execute(&script.replace("{s}", s))
                .await
                .map_err(fail)?;
            tx.execute(
                &format!("INSERT INTO {s}.server_schema_version (version) VALUES ($1)"),
                &[version],
            )
            .await
            .map_err(fail)?;
        }
        tx.commit().await.map_err(fail)
    }

    /// The account a bearer token stands for, or `unauthorized` with why.
    ///
    /// # Errors
    /// `unauthorized` for a malformed, unknown or revoked token; `unavailable` when the
    /// database cannot be asked.
    pub async fn authenticate(&self, token: &str) -> Result<Account, ApiError> {
        let Some(token_id) = token
            .strip_prefix(TOKEN_PREFIX)
            .and_then(|rest| rest.split_once('_'))
            .map(|(id, _)| id.to_string())
        else {
            return Err(ApiError::unauthorized(
                "the bearer token is not a CCM sync token (they start with 'ccm_'); copy it again from `ccm-server token create`",
            ));
        };
        let client = self.client().await?;
        let s = &self.schema;
        let found = client
            .query_opt(
                &format!("SELECT account, revoked_at IS NOT NULL FROM {s}.tokens WHERE hash = $1"),
                &[&token_hash(token)],
            )
            .await
            .map_err(|e| db_error("the token could not be checked", e))?;
        match found {
            None => Err(ApiError::unauthorized(
                "the bearer token is not known to this server; check that it was copied whole, or create one with `ccm-server token create`",
            )),
            Some(row) if row.get::<_, bool>(1) => Err(ApiError::unauthorized(
                "the bearer token was revoked; ask for a new one (`ccm-server token create` or `token rotate`)",
            )),
            Some(row) => Ok(Account {
                id: row.get(0),
                token_id,
            }),
        }
    }

    /// Creates a token for the account `name`, creating the account when it is new.
    ///
    /// # Errors
    /// `bad_request` for an unusable name; `unavailable` when the database cannot be reached.
    pub async fn create_token(&self, name: &str, label: &str) -> Result<CreatedToken, ApiError> {
        check_account_name(name)?;
        let s = &self.schema;
        let mut client = self.client().await?;
        let tx = client
            .transaction()
            .await
            .map_err(|e| db_error("the token could not be created", e))?;
        let new_id = random_hex(8)?;
        tx.execute(
            &format!(
                "INSERT INTO {s}.accounts (id, name) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING"
            ),
            &[&new_id, &name],
        )
        .await
        .map_err(|e| db_error("the account could not be created", e))?;
        let account_id: String = tx
            .query_one(
                &format!("SELECT id FROM {s}.accounts WHERE name = $1"),
                &[&name],
            )
            .await
            .map_err(|e| db_error("the account could not be read", e))?
            .get(0);
        let token_id = random_hex(6)?;
        let token = format!("{TOKEN_PREFIX}{token_id}_{}", random_hex(32)?);
        tx.execute(
            &format!("INSERT INTO {s}.tokens (id, account, hash, label) VALUES ($1, $2, $3, $4)"),
            &[&token_id, &account_id, &token_hash(&token), &label],
        )
        .await
        .map_err(|e| db_error("the token could not be stored", e))?;
        tx.commit()
            .await
            .map_err(|e| db_error("the token could not be stored", e))?;
        Ok(CreatedToken {
            account_id,
            account_name: name.to_string(),
            token_id,
            token,
        })
    }

    /// Revokes every live token of account `name` and creates a new one, in one transaction:
    /// devices with an old token are refused from this moment on.
    ///
    /// # Errors
    /// `not_found` for an unknown account; as [`create_token`](Self::create_token).
    pub async fn rotate(&self, name: &str, label: &str) -> Result<(CreatedToken, u64), ApiError> {
        let revoked = self.revoke_account(name).await?;
        Ok((self.create_token(name, label).await?, revoked))
    }

    /// Revokes the token with id `token_id`. Returns whether a live token was revoked.
    ///
    /// # Errors
    /// `unavailable` when the database cannot be reached.
    pub async fn revoke_token(&self, token_id: &str) -> Result<bool, ApiError> {
        let s = &self.schema;
        let changed = self
            .client()
            .await?
            .execute(
                &format!(
                    "UPDATE {s}.tokens SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL"
                ),
                &[&token_id],
            )
            .await
            .map_err(|e| db_error("the token could not be revoked", e))?;
        Ok(changed > 0)
    }

    /// Revokes every live token of account `name`. Returns how many were revoked.
    ///
    /// # Errors
    /// `not_found` for an unknown account; `unavailable` when the database cannot be reached.
    pub async fn revoke_account(&self, name: &str) -> Result<u64, ApiError> {
        let s = &self.schema;
        let client = self.client().await?;
        let account = client
            .query_opt(
                &format!("SELECT id FROM {s}.accounts WHERE name = $1"),
                &[&name],
            )
            .await
            .map_err(|e| db_error("the account could not be read", e))?
            .ok_or_else(|| ApiError::not_found(format!("there is no account named '{name}'")))?;
        let id: String = account.get(0);
        client
            .execute(
                &format!("UPDATE {s}.tokens SET revoked_at = now() WHERE account = $1 AND revoked_at IS NULL"),
                &[&id],
            )
            .await
            .map_err(|e| db_error("the tokens could not be revoked", e))
    }

    /// Every token, oldest first, without secrets.
    ///
    /// # Errors
    /// `unavailable` when the database cannot be reached.
    pub async fn tokens(&self) -> Result<Vec<TokenInfo>, ApiError> {
        let s = &self.schema;
        let rows = self
            .client()
            .await?
            .query(
                &format!(
                    "SELECT t.id, a.name, t.label, to_char(t.created_at, 'YYYY-MM-DD HH24:MI:SS'),
                            to_char(t.revoked_at, 'YYYY-MM-DD HH24:MI:SS')
                     FROM {s}.tokens t JOIN {s}.accounts a ON a.id = t.account
                     ORDER BY t.created_at, t.id"
                ),
                &[],
            )
            .await
            .map_err(|e| db_error("the tokens could not be listed", e))?;
        Ok(rows
            .iter()
            .map(|r| TokenInfo {
                id: r.get(0),
                account: r.get(1),
                label: r.get(2),
                created: r.get(3),
                revoked: r.get(4),
            })
            .collect())
    }

    /// Whether the database answers: the readiness check.
    ///
    /// # Errors
    /// `unavailable` with the reason.
    pub async fn ping(&self) -> Result<(), ApiError> {
        self.client()
            .await?
            .simple_query("SELECT 1")
            .await
            .map_err(|e| db_error("the database does not answer", e))?;
        Ok(())
    }
}
