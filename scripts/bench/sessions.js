// Stored sessions for the memory scenario: rows as tkgate writes them (hashes only), spread over users.
import { createHash, randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';

export async function clearSessions(filename) {
  const db = new Database(filename);
  db.exec('DELETE FROM sessions');
  db.close();
}

/** N live sessions: 100 per user (the bench config allows 200), users cloned from the bench user. */
export async function insertSessions(filename, count) {
  const db = new Database(filename);
  const template = db.prepare('SELECT password_hash FROM users WHERE username = ?').get('bench');
  const now = Date.now();
  const users = Math.ceil(count / 100);
  const addUser = db.prepare('INSERT INTO users (username, password_hash, power, disabled, created_at, sessions_revoked_at) VALUES (?, ?, 0, 0, ?, 0)');
  const addSession = db.prepare('INSERT INTO sessions (token_hash, user_id, created_at, last_used_at, expires_at, login_seq) VALUES (?, ?, ?, ?, ?, ?)');
  db.transaction(() => {
    for (let u = 0; u < users; u++) {
      const userId = Number(addUser.run(`bench-${u}`, template.password_hash, now).lastInsertRowid);
      for (let i = 0; i < 100 && u * 100 + i < count; i++) {
        addSession.run(createHash('sha256').update(randomBytes(32)).digest('hex'), userId, now, now, now + 3_600_000, u * 100 + i + 1);
      }
    }
  })();
  db.close();
}
