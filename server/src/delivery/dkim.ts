/**
 * DKIM signing at send time (DKIM_DOMAIN, DKIM_SELECTOR, DKIM_PRIVATE_KEY_FILE): nodemailer's own
 * signer (the code behind its `dkim` transport option; the relay is spoken to through SMTPConnection, smtp-pool.ts,
 * so the transport option itself never runs). The stored bytes stay unsigned: each attempt signs them again, so a
 * resend carries the same signed headers with a fresh signature.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import DKIM from 'nodemailer/lib/dkim/index.js';

export interface DkimSettings {
  domain: string;
  selector: string;
  privateKeyFile: string;
}

export type MessageSigner = (raw: Buffer) => Promise<Buffer>;

/** Reads the key now, so a bad file stops the start rather than the first send. */
export function createDkimSigner(settings: DkimSettings): MessageSigner {
  const privateKey = fs.readFileSync(settings.privateKeyFile, 'utf8');
  const key = crypto.createPrivateKey(privateKey);
  if (key.asymmetricKeyType !== 'rsa') throw new Error(`DKIM_PRIVATE_KEY_FILE ${settings.privateKeyFile} is not an RSA private key.`);
  const dkim = new DKIM({ domainName: settings.domain, keySelector: settings.selector, privateKey });
  return async (raw) => {
    const chunks: Buffer[] = [];
    for await (const chunk of dkim.sign(raw)) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  };
}

/** An RSA-2048 key pair: the private key as PKCS#8 PEM, and the DNS TXT record that publishes the public one. */
export function generateDkimKey(domain: string, selector: string): { privateKeyPem: string; recordName: string; recordValue: string } {
  const { privateKey, publicKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const p = publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
  return {
    privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    recordName: `${selector}._domainkey.${domain}`,
    recordValue: `v=DKIM1; k=rsa; p=${p}`,
  };
}
