/**
 * OpenAI's multipart endpoints (image edits, transcriptions): the form is parsed whole (busboy), its `model`
 * field read by exact name, and the upstream gets that parsed form encoded again (Node's FormData), never the
 * client's bytes: a part the upstream's parser could read differently from ours (a name in other case, a second
 * `model`, odd part headers) cannot reach it.
 */
import { Busboy } from '@fastify/busboy';
import { proxyErrors } from './errors.ts';

export const isMultipart = (contentType: string | undefined): boolean =>
  /^multipart\/form-data\s*(?:;|$)/i.test(contentType ?? '');

/** A parsed form and its one `model` field (undefined when it has none). */
export interface MultipartForm {
  form: FormData;
  model: string | undefined;
}

/**
 * Parses a whole multipart body. 400 for a malformed form, a `model` that is a file or comes more than once,
 * and a field whose name is `model` in another case (which some parsers would read as the model).
 */
export async function parseMultipart(raw: Buffer, contentType: string): Promise<MultipartForm> {
  const form = await readForm(raw, contentType);
  let model: string | undefined;
  let seen = 0;
  for (const [name, value] of form) {
    if (name.toLowerCase() !== 'model') continue;
    if (name !== 'model') throw proxyErrors.invalidMultipartField(`a field named ${JSON.stringify(name)}`);
    if (++seen > 1) throw proxyErrors.invalidMultipartField('more than one "model" field');
    if (typeof value !== 'string') throw proxyErrors.invalidMultipartField('a "model" field that is a file');
    model = value;
  }
  return { form, model };
}

/**
 * A whole multipart/form-data body as a FormData, its parts in their order (a part with a filename is a file);
 * 400 when it is malformed. No part is cut short: the body is already within max_body_bytes.
 */
export function readForm(raw: Buffer, contentType: string): Promise<FormData> {
  return new Promise((resolve, reject) => {
    const malformed = () => reject(proxyErrors.invalidMultipart());
    let parser: ReturnType<typeof Busboy>;
    try {
      parser = Busboy({ headers: { 'content-type': contentType }, limits: { fieldSize: raw.length } });
    } catch {
      malformed();
      return;
    }
    /** Each part where it stands; a file's is its bytes once they have all been read. */
    const parts: [name: string, value: string | Promise<File>][] = [];
    parser.on('field', (name, value) => parts.push([name, value]));
    parser.on('file', (name, stream, filename, _encoding, type) => {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      parts.push([name, new Promise((done) => stream.on('end', () => done(new File(chunks, filename, { type }))))]);
    });
    parser.on('error', malformed);
    parser.on('finish', () => {
      void (async () => {
        const form = new FormData();
        for (const [name, value] of parts) form.append(name, await value);
        resolve(form);
      })();
    });
    parser.end(raw);
  });
}

/** The form as the upstream gets it: `model` set to `model` (an alias resolved), encoded with a boundary of ours. */
export async function encodeMultipart(form: FormData, model: string): Promise<{ body: Buffer; contentType: string }> {
  // set() replaces the one model field where it stands.
  form.set('model', model);
  const encoded = new Response(form);
  return {
    body: Buffer.from(await encoded.arrayBuffer()),
    contentType: encoded.headers.get('content-type') as string,
  };
}
