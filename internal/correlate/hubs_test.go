package correlate

import (
	"reflect"
	"testing"
)

// TestHubCacheDecidesEveryMethod makes whoever adds a method to Tx decide
// what hubCache does with it: each is either overridden (it may write
// incidents or their key nodes: the cache forgets) or named here as one
// that cannot change a node's hub status (it passes through).
func TestHubCacheDecidesEveryMethod(t *testing.T) {
	overridden := map[string]bool{"HubNodes": true, "CreateIncident": true, "MergeIncident": true, "RebuildIncident": true,
		"InsertObservation": true, "JoinIncident": true, "UpdateObservation": true, "DeleteObservation": true,
		"GrowObservation": true, "GrowIncident": true, "CreateRollup": true, "JoinRollup": true, "UpdateRollup": true,
		"AddRollupSource": true, "TakeIntoRollup": true, "LeaveRollup": true, "SetRaisedBy": true}
	passThrough := map[string]bool{"CheckRefs": true, "UpsertNodes": true, "LockKeys": true, "OpenIncidents": true,
		"RecordEvent": true, "RecordEvents": true, "LockObservation": true, "ObservationIncidents": true,
		"LockDetections": true, "RecordSignals": true, "RecordedUnits": true, "Bursts": true, "SignalsFrom": true,
		"NewestSignals": true, "WindowSignals": true, "StartBurst": true, "ExtendBurst": true, "AddRisk": true,
		"Risk": true, "DetectionSources": true, "LockRollup": true, "OpenRollup": true, "RollupOf": true,
		"RollupCandidates": true, "RollupsOf": true, "Node": true}
	tx := reflect.TypeOf((*Tx)(nil)).Elem()
	own := reflect.TypeOf(&hubCache{})
	for i := range tx.NumMethod() {
		name := tx.Method(i).Name
		switch {
		case overridden[name] && passThrough[name]:
			t.Errorf("%s: both overridden and passed through", name)
		case overridden[name]:
			m, _ := own.MethodByName(name)
			if m.Func.IsValid() && m.Index < 0 {
				t.Errorf("%s: not a method of hubCache", name)
			}
		case !passThrough[name]:
			t.Errorf("Tx.%s: decide whether it may change a node's hub status (override it in hubCache, forgetting) or cannot (list it here)", name)
		}
	}
}
