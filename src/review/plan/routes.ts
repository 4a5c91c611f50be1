import { Router } from '../../http/router.ts';
import type { Context } from 'koa';
import type { Logger } from 'pino';
import { PERMISSION_MODES, type ReviewConfig } from '../../config/review.ts';
import { JsonAnswer, sendJson } from '../../http/json-bytes.ts';
import type {
  ApproveRequest,
  DecisionResponse,
  DenyRequest,
  NotevaultRequest,
  PlanDecision,
  PlanResponse,
  PlanSave,
  VaultsResponse,
} from '../contract.ts';
import { reviewErrors } from '../errors.ts';
import type { DecisionGate } from '../decision.ts';
import { folderProblem, resolveInsideRoots, userPath } from '../paths.ts';
import { readBody, type FieldReader } from '../validate.ts';
import { localDate, planSlug, writeNewFile } from './files.ts';
import { listVaults, noteFolder, notememoUrl, writeNote } from './notes.ts';

export type { PlanDecision };

export const DEFAULT_DENY_FEEDBACK = 'Plan rejected by user';

export interface PlanReviewOptions {
  plan: string;
  /** The host agent's current permission mode, reported by `GET /api/plan`. */
  permissionMode: string;
  config: ReviewConfig;
  log: Logger;
  now?: () => Date;
}

/** Saving as asked: on unless `enabled` is false, `customPath` trimmed (blank is the default folder). */
type PlanSaveRequest = Required<Pick<PlanSave, 'enabled'>> & PlanSave;

function readPlanSave(body: FieldReader): PlanSaveRequest {
  const planSave = body.optionalObject('planSave');
  const customPath = planSave?.optionalString('customPath')?.trim();
  return { enabled: planSave?.optionalBoolean('enabled') ?? true, customPath: customPath || undefined };
}

function readNotevault(vault: FieldReader): NotevaultRequest {
  return {
    vaultPath: vault.requiredString('vaultPath'),
    folder: vault.optionalString('folder'),
    tags: vault.optionalStringArray('tags'),
    plan: vault.requiredString('plan'),
  };
}

function readApprove(body: FieldReader): ApproveRequest & { planSave: PlanSaveRequest } {
  const vault = body.optionalObject('notevault');
  const memo = body.optionalObject('notememo');
  return {
    notevault: vault && readNotevault(vault),
    notememo: memo && { plan: memo.requiredString('plan') },
    feedback: body.optionalString('feedback'),
    agentSwitch: body.optionalString('agentSwitch'),
    permissionMode: body.optionalEnum('permissionMode', PERMISSION_MODES),
    planSave: readPlanSave(body),
  };
}

function readDeny(body: FieldReader): DenyRequest & { planSave: PlanSaveRequest } {
  return { feedback: body.optionalString('feedback'), planSave: readPlanSave(body) };
}

/** A plan decision read back from JSON (a hub's answer), each field checked. */
export function readPlanDecision(body: FieldReader): PlanDecision {
  return {
    decision: body.requiredEnum('decision', ['approved', 'denied', 'timeout'] as const),
    feedback: body.optionalString('feedback') ?? null,
    savedPath: body.optionalString('savedPath') ?? null,
    permissionMode: body.optionalEnum('permissionMode', PERMISSION_MODES) ?? null,
    agentSwitch: body.optionalString('agentSwitch') ?? null,
  };
}

/**
 * The folder a plan is saved in, or null when saving is off. The default
 * folder is configuration (trusted); a `customPath` from the browser must
 * resolve, `..` and symlinks included, inside an allowed root.
 */
async function planSaveFolder(request: PlanSaveRequest, config: ReviewConfig): Promise<string | null> {
  if (!request.enabled) return null;
  if (request.customPath === undefined) return config.planDir;
  const requested = userPath(request.customPath, { home: config.home, base: config.projectDir });
  const real = await resolveInsideRoots(requested, config.allowedRoots);
  if (real === null) throw reviewErrors.pathNotAllowed('planSave.customPath');
  const problem = await folderProblem(real);
  if (problem !== null) throw reviewErrors.notAFolder('planSave.customPath', problem);
  return real;
}

/** The saved plan's content: a denied plan carries the reviewer's feedback at the end. */
export function savedPlanContent(plan: string, outcome: 'approved' | 'denied', feedback: string | null): string {
  const body = plan.endsWith('\n') ? plan : `${plan}\n`;
  return outcome === 'denied'
    ? `${body}\n---\n\n## Review feedback (denied)\n\n${feedback ?? DEFAULT_DENY_FEEDBACK}\n`
    : body;
}

/** `<slug>-<YYYY-MM-DD>-approved.md` or `-denied.md` in `folder`, never overwriting; the absolute path. */
export function savePlan(
  folder: string,
  plan: string,
  outcome: 'approved' | 'denied',
  feedback: string | null,
  now: Date,
): Promise<string> {
  return writeNewFile(
    folder,
    `${planSlug(plan)}-${localDate(now)}-${outcome}`,
    '.md',
    savedPlanContent(plan, outcome, feedback),
  );
}

/**
 * Wraps a write so its failure is a 500 that says what was not saved. The
 * decision is then not taken (DecisionGate frees the slot): the reviewer sees
 * the error and can decide again, e.g. with saving turned off.
 */
async function saving<T>(what: string, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    throw reviewErrors.saveFailed(what, error);
  }
}

/** The plan review server's routes. */
export function planRoutes({ plan, permissionMode, config, log, now = () => new Date() }: PlanReviewOptions) {
  return (gate: DecisionGate<PlanDecision>): Router => {
    const router = new Router();
    const noteOptions = {
      configPath: config.notevaultConfigPath,
      allowedRoots: config.allowedRoots,
      home: config.home,
      projectDir: config.projectDir,
    };

    // The plan never changes during a review: one serialisation serves every read.
    const answer: PlanResponse = { plan, origin: config.origin, permissionMode, sharingEnabled: config.sharingEnabled };
    const planAnswer = new JsonAnswer(answer);
    router.get('/api/plan', (ctx: Context) => sendJson(ctx, planAnswer));

    router.get('/api/notevault/vaults', async (ctx: Context) => {
      ctx.body = { vaults: await listVaults(config.notevaultConfigPath) } satisfies VaultsResponse;
    });

    router.post('/api/approve', async (ctx: Context) => {
      const request = readApprove(readBody(ctx.request.body));
      const folder = await planSaveFolder(request.planSave, config);
      const { notevault } = request;
      const note = notevault && { request: notevault, folder: await noteFolder(notevault, noteOptions) };
      // Built before anything is written: a decision that fails must leave nothing behind.
      const memoUrl = request.notememo && notememoUrl(config.notememoUrlTemplate, request.notememo.plan);
      await gate.decide(ctx, async () => {
        const at = now();
        const savedPath =
          folder === null ? null : await saving('plan', () => savePlan(folder, plan, 'approved', null, at));
        const notePath = note && (await saving('note', () => writeNote(note.folder, note.request, at)));
        log.info({ savedPath, notePath }, 'plan approved');
        return {
          body: {
            ok: true,
            ...(savedPath !== null && { savedPath }),
            ...(notePath !== undefined && { notevaultPath: notePath }),
            ...(memoUrl !== undefined && { notememoUrl: memoUrl }),
          } satisfies DecisionResponse,
          decision: {
            decision: 'approved',
            feedback: request.feedback ?? null,
            savedPath,
            permissionMode: request.permissionMode ?? null,
            agentSwitch: request.agentSwitch ?? null,
          },
        };
      });
    });

    router.post('/api/deny', async (ctx: Context) => {
      const request = readDeny(readBody(ctx.request.body));
      const feedback = request.feedback?.trim() ? request.feedback : DEFAULT_DENY_FEEDBACK;
      const folder = await planSaveFolder(request.planSave, config);
      await gate.decide(ctx, async () => {
        const savedPath =
          folder === null ? null : await saving('plan', () => savePlan(folder, plan, 'denied', feedback, now()));
        log.info({ savedPath }, 'plan denied');
        return {
          body: { ok: true, ...(savedPath !== null && { savedPath }) } satisfies DecisionResponse,
          decision: { decision: 'denied', feedback, savedPath, permissionMode: null, agentSwitch: null },
        };
      });
    });

    return router;
  };
}
