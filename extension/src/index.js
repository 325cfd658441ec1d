// unprune's Argo CD UI extension, registered through the documented window.extensionsAPI
// (docs/developer-guide/extensions/ui-extensions.md in Argo CD): a status panel item on every
// Application (what a prune or a cascade would delete, and the UI's releases with their undo), and
// an UNPRUNE action in the app's top bar, shown only while Argo CD lists a resource of the app as
// requiring pruning, whose flyout releases or guards each one.
//
// A top-bar action rather than a tab in every resource's panel: the tab would sit on every resource
// of every app though it has something to do only on the few that require pruning, and a resource's
// panel closes as soon as Argo CD drops the released resource from the app's tree, taking the
// outcome and the undo command with it; the top bar's flyout belongs to the app and stays open.
import {StatusPanel, Flyout, ActionLabel, ReleaseFlyout} from './components.js';
import {pruneRows} from './format.js';

((window) => {
    const api = window.extensionsAPI;
    if (!api || !api.registerStatusPanelExtension || !api.registerTopBarActionMenuExt) {
        console.warn('unprune: this Argo CD UI has no status panel or top bar extensions (unprune supports Argo CD v2.14 and later)');
        return;
    }
    api.registerStatusPanelExtension(StatusPanel, 'Prune risk (unprune)', 'unprune', Flyout);
    api.registerTopBarActionMenuExt(ActionLabel, 'Unprune', 'unprune-release', ReleaseFlyout, app => pruneRows(app).length > 0, 'fa fa-shield-alt');
})(window);
