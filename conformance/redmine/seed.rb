# Seeds the conformance Redmine: rails runner seed.rb ADMIN_LOGIN ADMIN_PASSWORD.
# Runs once, after `rake db:migrate redmine:load_default_data` (conformance/apps.sh). The data
# is chosen to make targets hard: subjects one character apart, more issues than a list page.
login, password = ARGV

admin = User.find_by_login('admin')
admin.login = login
admin.password = password
admin.password_confirmation = password
admin.must_change_passwd = false
admin.mail = 'it-admin@harbourlane.test'
admin.save!

Setting.default_language = 'en'
Setting.rest_api_enabled = '1'
Setting.login_required = '1'

project = Project.new(name: 'Member Services', identifier: 'member-services',
                      description: 'Requests from the member desk.', is_public: false)
project.trackers = Tracker.all
project.enabled_module_names = %w[issue_tracking time_tracking wiki]
project.save!

priorities = IssuePriority.all.index_by(&:name)
statuses = IssueStatus.all.index_by(&:name)
[
  ['Card not arriving for member 10428', 'Bug', 'High', 'New'],
  ['Card not arriving for member 10482', 'Bug', 'Normal', 'New'],
  ['Statement PDF shows wrong branch', 'Bug', 'Normal', 'In Progress'],
  ['Add savings goal widget', 'Feature', 'Low', 'New'],
  ['Branch hours wrong on Harbour St page', 'Bug', 'Urgent', 'New'],
  ['Export transfers as CSV', 'Feature', 'Normal', 'Resolved'],
] .each do |subject, tracker, priority, status|
  Issue.create!(project: project, tracker: Tracker.find_by_name(tracker), author: admin,
                subject: subject, priority: priorities.fetch(priority),
                status: statuses.fetch(status), description: "#{subject}.")
end
# Enough routine issues that the default list (25 a page) spans more than one page.
1.upto(30) do |n|
  Issue.create!(project: project, tracker: Tracker.find_by_name('Support'), author: admin,
                subject: format('Routine member request %02d', n), priority: priorities.fetch('Normal'),
                status: statuses.fetch('New'))
end
# Issue categories, no issue filed under them: the settings page lists each with its own
# Edit and Delete, and two names differ by one character.
['Cards', 'Cards 2', 'Statements', 'Branches', 'Online banking'].each do |name|
  IssueCategory.create!(project: project, name: name)
end
puts "seeded #{Issue.count} issues, #{IssueCategory.count} issue categories"
