/** Billable Temporal Cloud Actions read from a history's event types. */
import { temporal } from "@temporalio/proto";
import { historyActions, totalOf } from "../../../bench/support/temporal-actions";

const EventType = temporal.api.enums.v1.EventType;
type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

const upsert = (name: string): HistoryEvent => ({
  eventType: EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES,
  upsertWorkflowSearchAttributesEventAttributes: { searchAttributes: { indexedFields: { [name]: {} } } },
});
// fromObject converts the plain number to the proto's 64-bit integer type.
const marker = (workflowTaskCompletedEventId: number): HistoryEvent =>
  temporal.api.history.v1.HistoryEvent.fromObject({
    eventType: EventType.EVENT_TYPE_MARKER_RECORDED,
    markerRecordedEventAttributes: { markerName: "core_patch", workflowTaskCompletedEventId },
  });

test("counts starts, every activity attempt, updates, billed upserts and one Action per workflow task with markers", () => {
  const events: HistoryEvent[] = [
    { eventType: EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED },
    { eventType: EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED },
    {
      eventType: EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED,
      activityTaskStartedEventAttributes: { attempt: 1 },
    },
    {
      eventType: EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED,
      activityTaskStartedEventAttributes: { attempt: 3 },
    },
    upsert("KeelStatus"),
    upsert("TemporalChangeVersion"),
    marker(4),
    marker(4),
    marker(9),
    { eventType: EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED },
    { eventType: EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED },
  ];
  const counts = historyActions(events);
  expect(counts).toEqual({
    "workflow started": 1,
    update: 1,
    "activity started or retried": 4,
    "search-attribute upsert": 1,
    "markers (per workflow task)": 2,
  });
  expect(totalOf(counts)).toBe(9);
});
