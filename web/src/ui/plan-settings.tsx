// Where an approved or denied plan also goes: a plan file, a notevault note,
// a notememo note. Kept in cookies so the next review starts the same way.
import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.ts';
import type { Settings } from '../settings.ts';
import { Modal, errorText } from './common.tsx';

export function PlanSettingsDialog(props: {
  settings: Settings;
  update: (c: Partial<Settings>) => void;
  onClose: () => void;
}): JSX.Element {
  const { settings: s, update } = props;
  const [vaults, setVaults] = useState<string[]>();
  const [vaultError, setVaultError] = useState('');
  useEffect(() => {
    api
      .vaults()
      .then((r) => setVaults(r.vaults))
      .catch((e: unknown) => setVaultError(errorText(e)));
  }, []);
  const vaultChoices =
    vaults !== undefined && s.notevaultPath !== '' && !vaults.includes(s.notevaultPath)
      ? [s.notevaultPath, ...vaults]
      : (vaults ?? []);
  return (
    <Modal title="Settings" onClose={props.onClose}>
      <div class="modal-body settings">
        <fieldset>
          <legend>Save plans</legend>
          <label class="check">
            <input
              type="checkbox"
              checked={s.planSaveEnabled}
              onChange={(e) => update({ planSaveEnabled: e.currentTarget.checked })}
            />
            <span>Save each approved or denied plan as a Markdown file</span>
          </label>
          <label class="field">
            <span>Folder</span>
            <input
              type="text"
              value={s.planSavePath}
              placeholder="Server default (~/.gatehouse/plans)"
              disabled={!s.planSaveEnabled}
              onChange={(e) => update({ planSavePath: e.currentTarget.value })}
            />
          </label>
        </fieldset>
        <fieldset>
          <legend>notevault</legend>
          <label class="check">
            <input
              type="checkbox"
              checked={s.notevaultEnabled}
              onChange={(e) => update({ notevaultEnabled: e.currentTarget.checked })}
            />
            <span>Save approved plans to a notevault vault</span>
          </label>
          <label class="field">
            <span>Vault</span>
            <select
              value={s.notevaultPath}
              disabled={!s.notevaultEnabled || vaults === undefined}
              onChange={(e) => update({ notevaultPath: e.currentTarget.value })}
            >
              <option value="">
                {vaults === undefined
                  ? vaultError
                    ? 'Vaults unavailable'
                    : 'Loading…'
                  : vaultChoices.length === 0
                    ? 'No vault found'
                    : 'Choose a vault'}
              </option>
              {vaultChoices.map((v) => (
                <option key={v} value={v}>
                  {v}
                </option>
              ))}
            </select>
          </label>
          {vaultError !== '' && <p class="note warn">Could not list vaults: {vaultError}</p>}
          <label class="field">
            <span>Folder in the vault</span>
            <input
              type="text"
              value={s.notevaultFolder}
              placeholder="Vault root"
              disabled={!s.notevaultEnabled}
              onChange={(e) => update({ notevaultFolder: e.currentTarget.value })}
            />
          </label>
          <label class="field">
            <span>Tags</span>
            <input
              type="text"
              value={s.notevaultTags}
              placeholder="plan, project"
              disabled={!s.notevaultEnabled}
              onChange={(e) => update({ notevaultTags: e.currentTarget.value })}
            />
          </label>
        </fieldset>
        <fieldset>
          <legend>notememo</legend>
          <label class="check">
            <input
              type="checkbox"
              checked={s.notememoEnabled}
              onChange={(e) => update({ notememoEnabled: e.currentTarget.checked })}
            />
            <span>Open approved plans in notememo on this computer</span>
          </label>
        </fieldset>
      </div>
      <footer class="modal-foot">
        <span class="muted small">Settings are kept in cookies for this host.</span>
        <button type="button" class="btn primary" onClick={props.onClose}>
          Done
        </button>
      </footer>
    </Modal>
  );
}
