// unprune's Argo CD UI extension: a status panel item (with a flyout) on every Application, and a
// resource tab on every resource, registered through the documented window.extensionsAPI
// (docs/developer-guide/extensions/ui-extensions.md in Argo CD).
import {StatusPanel, Flyout, ResourceTab} from './components.js';

((window) => {
    const api = window.extensionsAPI;
    if (!api || !api.registerStatusPanelExtension || !api.registerResourceExtension) {
        console.warn('unprune: this Argo CD UI has no status panel or resource tab extensions (unprune supports Argo CD v2.14 and later)');
        return;
    }
    api.registerStatusPanelExtension(StatusPanel, 'Prune risk (unprune)', 'unprune', Flyout);
    // '**' matches every group, the core group's empty string included (minimatch).
    api.registerResourceExtension(ResourceTab, '**', '*', 'Unprune', {icon: 'fa-shield-alt'});
})(window);
